// libFuzzer's driver, for narrator-fuzz's main (the symbol is in the clang runtime that
// -sanitize=fuzzer links; only the fuzz build calls it).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
