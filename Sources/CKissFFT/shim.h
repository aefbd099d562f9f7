// KISS FFT (BSD-3-Clause), the float build Debian ships as libkissfft-float.
#ifndef kiss_fft_scalar
#define kiss_fft_scalar float
#endif
#include <kissfft/kiss_fftr.h>
