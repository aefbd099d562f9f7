#!/usr/bin/env bash
# The two-language sample lesson (Timings/lessons/colors.json): its narration, spoken by
# `narrator synth` (libespeak-ng) with word timings from espeak-ng's word events, in English
# (the lesson's default locale), Spanish (`es`, espeak-ng's Spain voice) and, for one clip,
# Mexican Spanish (`es-MX`, espeak-ng's Latin American voice; every other clip of es-MX falls
# back to es). Mono 16-bit at 24000 Hz: small files (about 30 KB a clip) at a rate every output
# format has (Opus lacks espeak-ng's own 22050 Hz, and `narrator pack --format opus` of the
# sample library needs it; synth resamples with libsoxr).
#
#   scripts/make-locale-fixtures.sh            # uses .build/debug/narrator (swift build first)
#   NARRATOR=/path/to/narrator scripts/make-locale-fixtures.sh
#
# The output depends on the espeak-ng version; the tests measure the files they find (their
# WAV headers), not numbers written here.
set -euo pipefail
cd "$(dirname "$0")/.."
NARRATOR=${NARRATOR:-.build/debug/narrator}
[ -x "$NARRATOR" ] || { echo "make-locale-fixtures: $NARRATOR not built (swift build --product narrator)" >&2; exit 1; }

say() { # LOCALE-FOLDER VOICE CLIP TEXT
    mkdir -p "Audio/lessons/colors/$1" "Timings/lessons/colors/$1"
    "$NARRATOR" synth "$4" --voice "$2" --rate 24000 \
        --output "Audio/lessons/colors/$1/$3.wav" --timings "Timings/lessons/colors/$1/$3.json"
}

# Phrases whose synthesised word timings pass `narrator validate`'s alignment check (espeak-ng's
# word events put "is" of "This is red." and "azul" of Spain's voice off their sound).
say en en red "This color is red."
say en en green "This is green."
say en en praise "Well done!"

say es es red "Es rojo."
say es es green "Es verde."
say es es praise "¡Bien hecho!"

say es-MX es-419 praise "¡Qué padre!"
