import { describe, expect, it } from 'vitest';
import { callSignal } from '../../src/platform/call-signal.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a call signal', () => {
  it('aborts after its time with a TimeoutError', async () => {
    const call = callSignal(undefined, 20);
    await sleep(60);
    expect(call.signal.aborted).toBe(true);
    expect((call.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it("aborts with the caller's signal and its reason, at once when that one already is", () => {
    const parent = new AbortController();
    const call = callSignal(parent.signal, 60_000);
    parent.abort(new Error('the user aborted'));
    expect(call.signal.aborted).toBe(true);
    expect((call.signal.reason as Error).message).toBe('the user aborted');
    call.release();
    expect(callSignal(parent.signal, 60_000).signal.reason).toBe(parent.signal.reason);
  });

  it('once released, neither its time nor the caller aborts it, and it left no listener on the caller', async () => {
    const parent = new AbortController();
    let listeners = 0;
    const add = parent.signal.addEventListener.bind(parent.signal);
    const remove = parent.signal.removeEventListener.bind(parent.signal);
    parent.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners++;
      add(...args);
    }) as typeof add;
    parent.signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      listeners--;
      remove(...args);
    }) as typeof remove;
    const call = callSignal(parent.signal, 20);
    expect(listeners).toBe(1);
    call.release();
    expect(listeners).toBe(0);
    await sleep(60);
    parent.abort();
    expect(call.signal.aborted).toBe(false);
  });
});
