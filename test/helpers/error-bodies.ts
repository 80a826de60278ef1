import { expect } from 'vitest';
import { ERROR_CODES, ERROR_CODE_OF_STATUS, OTHER_CODES_OF_STATUS, type ApiResponse } from './http.js';

/** Asserts an error answer: the status, a JSON content type and exactly `{error, message, details}` with the status's code. */
export function expectErrorShape(res: ApiResponse, status: number, label: string): void {
  expect(res.status, `${label}: ${res.text}`).toBe(status);
  expect(res.headers.get('content-type') ?? '', label).toMatch(/^application\/json/);
  const body = res.json as Record<string, unknown> | undefined;
  expect(body, `${label}: body is JSON`).toBeTypeOf('object');
  expect(Object.keys(body!).sort(), label).toEqual(['details', 'error', 'message']);
  expect(ERROR_CODES, label).toContain(body!.error);
  expect([ERROR_CODE_OF_STATUS[status], ...(OTHER_CODES_OF_STATUS[status] ?? [])], label).toContain(body!.error);
  expect(body!.message, label).toBeTypeOf('string');
  expect((body!.message as string).length, label).toBeGreaterThan(0);
  expect(body!.details, label).toBeTypeOf('object');
  expect(body!.details, label).not.toBeNull();
  expect(Array.isArray(body!.details), label).toBe(false);
}

/** No error body leaks a stack trace, SQL, the driver or an "Error:" prefix. */
export function expectNoLeaks(errorBodies: ReadonlyArray<{ label: string; text: string }>): void {
  for (const { label, text } of errorBodies) {
    expect(text, label).not.toMatch(/\n\s*at\s|\bat\s+\S+\s+\(|\bat\s+\S+:\d+:\d+/);
    expect(text, label).not.toMatch(/\bSELECT\b|\bINSERT\s+INTO\b|\bsqlite/i);
    expect(text, label).not.toMatch(/(^|["\s])\w*Error:/);
  }
}
