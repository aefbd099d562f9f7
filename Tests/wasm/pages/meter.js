// The peak level of a WebPlayer's output over the last 2048 frames (WasmBrowserTests' pages).
export function meter(player) {
  const analyser = player.context.createAnalyser();
  analyser.fftSize = 2048;
  player.node.connect(analyser);
  return () => {
    const data = new Float32Array(analyser.fftSize);
    analyser.getFloatTimeDomainData(data);
    return data.reduce((peak, x) => Math.max(peak, Math.abs(x)), 0);
  };
}
