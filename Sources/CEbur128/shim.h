// libebur128 (MIT): EBU R 128 / ITU-R BS.1770 loudness, loudness range and true peak.
#include <ebur128.h>
