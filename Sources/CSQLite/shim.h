// SQLite (public domain): the touch log (Sources/NarratorTouches, docs/touches.md).
#include <sqlite3.h>
