/** A minimal SSE reader over fetch: collects `{id, event, data}` frames until told to stop. */
export interface SseFrame {
  id?: string;
  event: string;
  data: any;
}

export async function readSse(
  url: string,
  opts: {
    token: string;
    headers?: Record<string, string>;
    until: (frames: SseFrame[]) => boolean;
    timeoutMs?: number;
    onFrame?: (frame: SseFrame) => void;
  },
): Promise<{ status: number; contentType: string | null; frames: SseFrame[]; ended: boolean }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs ?? 10_000);
  const res = await fetch(url, { headers: { authorization: `Bearer ${opts.token}`, ...opts.headers }, signal: controller.signal });
  const frames: SseFrame[] = [];
  let ended = false;
  if (res.status !== 200 || !res.body) {
    clearTimeout(timer);
    return { status: res.status, contentType: res.headers.get('content-type'), frames, ended: true };
  }
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    const reader = res.body.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      buffer += decoder.decode(value, { stream: true });
      let split: number;
      while ((split = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, split);
        buffer = buffer.slice(split + 2);
        const frame: SseFrame = { event: 'message', data: undefined };
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) frame.id = line.slice(4);
          else if (line.startsWith('event: ')) frame.event = line.slice(7);
          else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6));
        }
        frames.push(frame);
        opts.onFrame?.(frame);
      }
      if (opts.until(frames)) break;
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return { status: res.status, contentType: res.headers.get('content-type'), frames, ended };
}
