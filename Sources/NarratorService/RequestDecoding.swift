import Foundation
import NarratorCore

/// The daemon's request decoder as the package's fuzz target (`narrator-fuzz request`) calls
/// it: `ServiceRequest.parse`, the code every Unix-socket line and WebSocket message goes
/// through, reduced to its outcome. Package access: not part of the service's API.
package enum RequestDecoding {
    /// nil when `data` is a valid request; else the error the daemon would answer with.
    package static func decode(_ data: Data) -> NarratorError? {
        switch ServiceRequest.parse(data).result {
        case .success: nil
        case .failure(let error): error
        }
    }
}
