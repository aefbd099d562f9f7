#!/usr/bin/env bash
# Makes compressed audio files as the usual tools write them, for the decoder's tests
# (Tests/NarratorAudioFileTests/EncodedFileTests.swift): sox, ffmpeg and the Debian encoders
# (lame, oggenc, opusenc, flac), at several rates and lengths, into the folder given.
#
# Each file gets a line in manifest.tsv: name, encoder, rate, source frames, and the frames
# ffmpeg itself decodes from it (ffmpeg -i f -f s16le - | wc -c, divided by 2 bytes, one channel),
# at the rate ffmpeg decodes it (opus: always 48000).
#
# usage: scripts/encoded-audio.sh OUTDIR [RATES] [SECONDS]
set -euo pipefail
out=$1
rates=${2:-"8000 16000 22050 44100 48000"}
lengths=${3:-"0.05 0.3 2 7"}
mkdir -p "$out"
cd "$out"
: >manifest.tsv

# ffmpeg's own decoded frame count (mono s16) and the rate it decodes at. MP3 is named as such:
# ffmpeg's probe gives up on a file of a few small frames (8 kHz, 0.05 s) that it decodes whole
# once told the format.
demuxer() { case $1 in *.mp3) echo "-f mp3" ;; esac; }
ffmpeg_frames() {
    local bytes
    # shellcheck disable=SC2046
    bytes=$(ffmpeg -v error $(demuxer "$1") -i "$1" -f s16le -ac 1 - </dev/null | wc -c)
    echo $((bytes / 2))
}
ffmpeg_rate() {
    # shellcheck disable=SC2046
    ffprobe -v error $(demuxer "$1") -select_streams a:0 -show_entries stream=sample_rate -of default=nw=1:nk=1 "$1" | head -n 1
}
record() { # name encoder rate sourceFrames
    [ -s "$1" ] || { echo "encoder wrote nothing: $1" >&2; exit 1; }
    local decoded rate
    decoded=$(ffmpeg_frames "$1")
    rate=$(ffmpeg_rate "$1")
    [ "$decoded" -gt 0 ] && [ -n "$rate" ] || { echo "ffmpeg cannot decode $1" >&2; exit 1; }
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$decoded" "$rate" >>manifest.tsv
}

for rate in $rates; do
    for seconds in $lengths; do
        base="r${rate}-s${seconds}"
        # A tone under noise (repeatable: -R): never silent, never clipped, so every encoder
        # keeps all of it.
        sox -q -R -n -r "$rate" -b 16 -c 1 "$base.wav" synth "$seconds" sine 440 synth pinknoise mix vol 0.4
        frames=$(soxi -s "$base.wav")

        sox -q "$base.wav" "$base.sox.ogg" && record "$base.sox.ogg" sox "$rate" "$frames"
        sox -q "$base.wav" "$base.sox.flac" && record "$base.sox.flac" sox "$rate" "$frames"
        sox -q "$base.wav" "$base.sox.mp3" && record "$base.sox.mp3" sox "$rate" "$frames"

        ffmpeg -v error -nostdin -y -i "$base.wav" -c:a libvorbis "$base.ffmpeg.ogg" && record "$base.ffmpeg.ogg" ffmpeg "$rate" "$frames"
        ffmpeg -v error -nostdin -y -i "$base.wav" -c:a flac "$base.ffmpeg.flac" && record "$base.ffmpeg.flac" ffmpeg "$rate" "$frames"
        ffmpeg -v error -nostdin -y -i "$base.wav" -c:a libmp3lame "$base.ffmpeg.mp3" && record "$base.ffmpeg.mp3" ffmpeg "$rate" "$frames"
        ffmpeg -v error -nostdin -y -i "$base.wav" -c:a libmp3lame -write_xing 0 "$base.ffmpeg-noxing.mp3" &&
            record "$base.ffmpeg-noxing.mp3" ffmpeg-noxing "$rate" "$frames"
        # libopus takes 8, 12, 16, 24 or 48 kHz.
        case $rate in 8000 | 16000 | 48000)
            ffmpeg -v error -nostdin -y -i "$base.wav" -c:a libopus "$base.ffmpeg.opus" && record "$base.ffmpeg.opus" ffmpeg "$rate" "$frames"
            ;;
        esac

        lame --quiet "$base.wav" "$base.lame.mp3" && record "$base.lame.mp3" lame "$rate" "$frames"
        lame --quiet --cbr -t "$base.wav" "$base.lame-notag.mp3" && record "$base.lame-notag.mp3" lame-notag "$rate" "$frames"
        oggenc -Q -o "$base.oggenc.ogg" "$base.wav" && record "$base.oggenc.ogg" oggenc "$rate" "$frames"
        opusenc --quiet "$base.wav" "$base.opusenc.opus" && record "$base.opusenc.opus" opusenc "$rate" "$frames"
        flac -s -f -o "$base.flac.flac" "$base.wav" && record "$base.flac.flac" flac "$rate" "$frames"
        rm "$base.wav"
    done
done
