#include "lazy_library.h"
#include "rsvg_api.h"

/// Loads the library (first call) and binds the functions Narrator calls; NULL when it is
/// loaded, else the one line that says why it cannot be.
const char *narrator_rsvg_open(void);
