// Ages and durations as `kubectl get` prints them (its HumanDuration), computed here from the
// times the server sends, so that they tick without a message from the server.

export function parse(value) {
  if (!value) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

export function human(seconds) {
  if (seconds === null || seconds === undefined) return "-";
  const s = Math.floor(seconds);
  if (s < -1) return "<invalid>";
  if (s < 0) return "0s";
  if (s < 120) return `${s}s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 10) return s % 60 ? `${minutes}m${s % 60}s` : `${minutes}m`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 ? `${hours}h${minutes % 60}m` : `${hours}h`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) return hours % 24 ? `${days}d${hours % 24}h` : `${days}d`;
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (hours < 24 * 365 * 8) return days % 365 ? `${years}y${days % 365}d` : `${years}y`;
  return `${years}y`;
}

export function since(value, now) {
  const ms = parse(value);
  return ms === null ? null : (now - ms) / 1000;
}

export function between(start, end, now) {
  const from = parse(start);
  if (from === null) return null;
  const to = parse(end) ?? now;
  return Math.max(0, (to - from) / 1000);
}

export function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour12: false });
}

export function stamp(value) {
  const ms = parse(value);
  return ms === null ? "-" : new Date(ms).toLocaleString([], { hour12: false });
}
