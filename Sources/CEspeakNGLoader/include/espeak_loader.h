#include "lazy_library.h"

/// Loads the library (first call) and binds the functions Narrator calls; NULL when it is
/// loaded, else the one line that says why it cannot be.
const char *narrator_espeak_open(void);
