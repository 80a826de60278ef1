import { cleanup, render, screen } from '@testing-library/react';
import { createElement } from 'react';
import { afterEach, beforeAll } from 'vitest';

/**
 * Each test file gets a fresh jsdom window, which does its heaviest work on first use: the first
 * getComputedStyle parses jsdom's user-agent stylesheet, the first role query compiles the selectors
 * of every implicit ARIA role, and React's first render runs cold. At CI load (~15 on 2 cores) that was
 * 5-7 s, billed to whichever test came first and failing its 5 s budget. It is paid here, once per
 * file, so a test's time is its own.
 */
beforeAll(() => {
  render(createElement('label', null, 'Warm-up', createElement('input', { type: 'text' })));
  render(createElement('button', { type: 'button' }, 'Warm up'));
  screen.getByRole('button', { name: 'Warm up' });
  screen.getByLabelText('Warm-up');
  cleanup();
}, 60_000);

afterEach(() => cleanup());
