#ifndef NARRATOR_QUIET_MPG123_H
#define NARRATOR_QUIET_MPG123_H

/// Whether libmpg123 handles are made quiet: 1 once a handle was created through the wrapper
/// and made quiet, 0 before any, -1 when libmpg123 was not found behind it. For tests and
/// diagnostics; calling it also keeps the wrapper linked into the executable.
int narrator_quiet_mpg123_state(void);

#endif
