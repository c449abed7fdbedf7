// How the page talks to its server: every request and stream carries the access token (in
// the query, as EventSource cannot send headers; actions also in a header, which is what
// the server checks for anything that changes the cluster).

const TOKEN_HEADER = "X-Kubetrain-Token";

export const token =
  document.querySelector('meta[name="kubetrain-token"]')?.getAttribute("content") ||
  new URLSearchParams(location.search).get("token") ||
  "";

export function url(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (Array.isArray(value)) value.forEach((v) => query.append(key, v));
    else if (value !== undefined && value !== null && value !== "") query.set(key, value);
  }
  query.set("token", token);
  return `${path}?${query}`;
}

export function jobParams(ref) {
  return { namespace: ref.namespace, kind: ref.kind, name: ref.name };
}

async function answer(response) {
  let body = null;
  try {
    body = await response.json();
  } catch (_) {
    body = null;
  }
  if (!response.ok) {
    throw new Error(body?.error || `${response.status} ${response.statusText}`);
  }
  return body;
}

export async function getJSON(path, params) {
  return answer(await fetch(url(path, params), { headers: { [TOKEN_HEADER]: token } }));
}

export async function act(ref, action) {
  const path = ["/api/jobs", ref.namespace, ref.kind, ref.name, action]
    .map((part, i) => (i === 0 ? part : encodeURIComponent(part)))
    .join("/");
  return answer(
    await fetch(url(path), { method: "POST", headers: { [TOKEN_HEADER]: token } }),
  );
}

// A server-sent event stream that reconnects on its own: the browser retries a broken one
// (the server asks for 1 s), and a stream the browser gave up on is opened anew.
export function stream(path, params, handlers, onStatus) {
  let source = null;
  let stopped = false;
  let timer = null;
  const open = () => {
    if (stopped) return;
    source = new EventSource(url(path, params));
    source.onopen = () => onStatus?.("live");
    source.onerror = () => {
      onStatus?.("reconnecting");
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        timer = setTimeout(open, 2000);
      }
    };
    for (const [event, handle] of Object.entries(handlers)) {
      source.addEventListener(event, (message) => handle(JSON.parse(message.data)));
    }
  };
  open();
  return () => {
    stopped = true;
    clearTimeout(timer);
    source?.close();
  };
}
