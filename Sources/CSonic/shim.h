// libsonic-dev ships no pkg-config file: the header is /usr/include/sonic.h and the library
// -lsonic, both on the default paths.
#include <sonic.h>
