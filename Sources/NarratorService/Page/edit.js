// `narrator edit`: a clip's waveform and words, each boundary draggable, playback of a word
// or a range with the word being heard highlighted, and Save. Frames throughout; seconds only
// where Web Audio asks for them.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)");
  // What the page is doing, for people (the status line) and for tests.
  const editor = (window.editor = { state: "loading", playing: null, clock: null, log: [], dirty: false });

  let clip = null; // from /clip.json
  let words = []; // [{text, start, end}], frames of the clip
  let width = 0; // CSS pixels of the waveform: one per envelope column
  let audio = null; // {context, buffer}
  let playback = null; // {source, from, to, t0, p0, wall}
  let anchor = null; // the first word of the selection
  let selection = null; // [first, last] word indexes

  const x = (frame) => (frame * width) / clip.frames;
  const status = (text, error = false) => {
    $("status").textContent = text;
    $("status").className = error ? "error" : "";
  };

  function drawWave() {
    const canvas = $("wave");
    canvas.width = width;
    canvas.style.width = width + "px";
    const g = canvas.getContext("2d");
    const h = canvas.height;
    const y = (v) => ((1 - v) * h) / 2;
    g.fillStyle = "#fff";
    g.fillRect(0, 0, width, h);
    const e = clip.envelope;
    for (let c = 0; c < e.columns; c++) {
      if (e.min[c] === null) continue;
      g.fillStyle = "#3b6ea5";
      g.fillRect(c, y(e.max[c]), 1, Math.max(1, y(e.min[c]) - y(e.max[c])));
      g.fillStyle = "#8fb3dc";
      g.fillRect(c, y(e.rms[c]), 1, Math.max(0, y(-e.rms[c]) - y(e.rms[c])));
    }
    $("stage").style.width = width + "px";
    $("playhead").style.height = h + "px";
  }

  // The word boxes and their boundaries' handles, drawn again whenever a frame changes.
  function layout() {
    const box = $("words");
    box.replaceChildren();
    for (const old of document.querySelectorAll(".handle")) old.remove();
    words.forEach((word, i) => {
      const el = document.createElement("div");
      el.className = "word";
      el.dataset.index = i;
      el.textContent = word.text;
      el.title = `${word.text}: frames ${word.start}–${word.end}`;
      el.tabIndex = 0;
      el.setAttribute("role", "button");
      el.setAttribute("aria-label", `play '${word.text}'`);
      el.style.left = x(word.start) + "px";
      el.style.width = Math.max(1, x(word.end) - x(word.start)) + "px";
      if (selection && i >= selection[0] && i <= selection[1]) el.classList.add("selected");
      if (editor.playing === i) el.classList.add("playing");
      el.addEventListener("click", (event) => pick(i, event.shiftKey));
      el.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); pick(i, event.shiftKey); }
      });
      box.append(el);
      for (const edge of ["start", "end"]) $("stage").append(handle(i, edge));
    });
  }

  // The frames boundary `edge` of word `i` may take: not past its word's other boundary nor
  // into its neighbour, and inside the clip.
  function limits(i, edge) {
    if (edge === "start") return [i > 0 ? words[i - 1].end : 0, words[i].end];
    return [words[i].start, i + 1 < words.length ? words[i + 1].start : clip.frames];
  }

  // A frame the file's format holds exactly: any, or (WebVTT, SubRip) a whole millisecond's.
  function representable(frame) {
    const r = clip.resolution;
    return r > 1 ? Math.round(Math.round(frame / r) * r) : Math.round(frame);
  }

  function move(i, edge, frame) {
    const [low, high] = limits(i, edge);
    const to = Math.min(high, Math.max(low, representable(frame)));
    if (to === words[i][edge]) return false;
    words[i][edge] = to;
    editor.dirty = true;
    status("unsaved changes");
    return true;
  }

  function place(el, i, edge) {
    el.style.left = x(words[i][edge]) + "px";
    el.setAttribute("aria-valuenow", words[i][edge]);
    el.setAttribute("aria-valuetext", `${(words[i][edge] / clip.rate).toFixed(3)} s (frame ${words[i][edge]})`);
    const [low, high] = limits(i, edge);
    el.setAttribute("aria-valuemin", low);
    el.setAttribute("aria-valuemax", high);
  }

  function handle(i, edge) {
    const el = document.createElement("div");
    el.className = "handle " + edge;
    el.dataset.index = i;
    el.dataset.edge = edge;
    el.tabIndex = 0;
    el.setAttribute("role", "slider");
    el.setAttribute("aria-orientation", "horizontal");
    el.setAttribute("aria-label", `${edge} of word ${i + 1} '${words[i].text}'`);
    place(el, i, edge);
    // A drag moves the boundary by the pixels the pointer moved, at the waveform's scale.
    el.addEventListener("pointerdown", (event) => {
      event.preventDefault();
      el.setPointerCapture(event.pointerId);
      el.classList.add("dragging");
      const x0 = event.clientX;
      const f0 = words[i][edge];
      const onMove = (e) => {
        if (move(i, edge, f0 + ((e.clientX - x0) * clip.frames) / width)) { place(el, i, edge); relayoutWord(i); }
      };
      const onUp = () => {
        el.classList.remove("dragging");
        el.removeEventListener("pointermove", onMove);
        el.removeEventListener("pointerup", onUp);
        el.removeEventListener("pointercancel", onUp);
        layout();
        const again = document.querySelector(`.handle[data-index="${i}"][data-edge="${edge}"]`);
        if (again) again.focus();
      };
      el.addEventListener("pointermove", onMove);
      el.addEventListener("pointerup", onUp);
      el.addEventListener("pointercancel", onUp);
    });
    el.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
      event.preventDefault();
      const step = (clip.rate / 1000) * (event.shiftKey ? 10 : 1) * (event.key === "ArrowLeft" ? -1 : 1);
      if (move(i, edge, words[i][edge] + step)) { place(el, i, edge); relayoutWord(i); }
    });
    return el;
  }

  function relayoutWord(i) {
    const el = document.querySelector(`.word[data-index="${i}"]`);
    if (!el) return;
    el.style.left = x(words[i].start) + "px";
    el.style.width = Math.max(1, x(words[i].end) - x(words[i].start)) + "px";
    el.title = `${words[i].text}: frames ${words[i].start}–${words[i].end}`;
  }

  // A click plays the word; Shift+click plays the words from the last one clicked to this one.
  function pick(i, extend) {
    if (extend && anchor !== null) {
      selection = [Math.min(anchor, i), Math.max(anchor, i)];
    } else {
      anchor = i;
      selection = [i, i];
    }
    for (const el of document.querySelectorAll(".word")) {
      const k = Number(el.dataset.index);
      el.classList.toggle("selected", k >= selection[0] && k <= selection[1]);
    }
    playSelection();
  }

  async function loadAudio() {
    if (audio) return audio;
    // At the clip's rate, so that a frame of the page is a frame of the audio.
    let context;
    try { context = new AudioContext({ sampleRate: clip.rate }); } catch (_) { context = new AudioContext(); }
    const data = await (await fetch("/audio.wav")).arrayBuffer();
    const buffer = await context.decodeAudioData(data);
    audio = { context, buffer };
    return audio;
  }

  async function playSelection() {
    if (!selection) return;
    await play(words[selection[0]].start, words[selection[1]].end);
  }

  async function play(from, to) {
    stop();
    const { context, buffer } = await loadAudio();
    if (context.state === "suspended") { try { await context.resume(); } catch (_) { /* the wall clock steps in */ } }
    const source = context.createBufferSource();
    source.buffer = buffer;
    source.connect(context.destination);
    const t0 = context.currentTime;
    source.start(0, from / clip.rate, Math.max(0, to - from) / clip.rate);
    playback = { source, from, to, t0, p0: performance.now(), wall: false };
    editor.state = "playing";
    editor.log.push(`play@${from}-${to}`);
    tick();
  }

  // Where playback is, in frames: from the audio's clock while it advances; from the wall
  // clock when there is no audio output to move it (then the audio itself is not heard either).
  function position() {
    const p = playback;
    const context = audio.context;
    let seconds = context.currentTime - p.t0;
    if (!p.wall && seconds <= 0 && performance.now() - p.p0 > 250) {
      p.wall = true;
      editor.log.push("clock:wall");
    }
    if (p.wall) seconds = (performance.now() - p.p0) / 1000;
    editor.clock = p.wall ? "wall" : "audio";
    return p.from + seconds * clip.rate;
  }

  function highlight(index) {
    if (editor.playing === index) return;
    editor.playing = index;
    for (const el of document.querySelectorAll(".word.playing")) el.classList.remove("playing");
    if (index !== null) {
      const el = document.querySelector(`.word[data-index="${index}"]`);
      if (el) el.classList.add("playing");
      editor.log.push(`word@${index}`);
    }
  }

  function tick() {
    if (!playback) return;
    const frame = position();
    if (frame >= playback.to) { stop(); return; }
    const index = words.findIndex((w) => w.start <= frame && frame < w.end);
    highlight(index < 0 ? null : index);
    const head = $("playhead");
    if (reducedMotion.matches) {
      head.style.display = "none";
    } else {
      head.style.display = "block";
      head.style.left = x(frame) + "px";
    }
    requestAnimationFrame(tick);
  }

  function stop() {
    if (playback) {
      try { playback.source.stop(); } catch (_) { /* already ended */ }
      playback = null;
      editor.log.push("stopped");
    }
    highlight(null);
    $("playhead").style.display = "none";
    if (editor.state === "playing") editor.state = "ready";
  }

  async function save() {
    editor.state = "saving";
    status("saving…");
    try {
      const reply = await fetch("/save", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ words: words.map((w) => ({ text: w.text, start: w.start, end: w.end })) }),
      });
      const text = await reply.text();
      if (!reply.ok) {
        editor.state = "error";
        editor.error = text.trim();
        status(text.trim(), true);
        return;
      }
      const saved = JSON.parse(text);
      const moved = saved.words.filter((w, i) => w.start !== words[i].start || w.end !== words[i].end).length;
      words = saved.words;
      editor.dirty = false;
      editor.state = "saved";
      editor.saves = (editor.saves || 0) + 1;
      status(`saved ${saved.saved} (${saved.format})` + (moved ? `; ${moved} word(s) rounded to what the format holds` : ""));
      layout();
    } catch (error) {
      editor.state = "error";
      editor.error = String(error);
      status(String(error), true);
    }
  }

  async function start() {
    clip = await (await fetch("/clip.json")).json();
    words = clip.words;
    width = clip.envelope.columns;
    $("title").textContent = `${clip.clip} · ${clip.timings} (${clip.format}) · ${clip.rate} Hz, ${clip.frames} frames`;
    document.title = `edit ${clip.clip} · Narrator`;
    drawWave();
    layout();
    $("play").addEventListener("click", playSelection);
    $("stop").addEventListener("click", stop);
    $("save").addEventListener("click", save);
    window.addEventListener("beforeunload", (event) => { if (editor.dirty) event.preventDefault(); });
    editor.frames = clip.frames;
    editor.width = width;
    editor.state = "ready";
    status(`${words.length} words`);
  }

  start().catch((error) => { editor.state = "error"; editor.error = String(error); status(String(error), true); });
})();
