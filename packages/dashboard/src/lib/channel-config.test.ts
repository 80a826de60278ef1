import { describe, expect, it } from 'vitest';
import { CHANNEL_FIELDS, CHANNEL_TYPES, configFrom, describeConfig, valuesFrom } from './channel-config';

describe('a notification channel’s settings as form fields', () => {
  it('has fields for every channel type the API takes', () => {
    for (const type of CHANNEL_TYPES) expect(CHANNEL_FIELDS[type].length).toBeGreaterThan(0);
  });

  it('builds the config: lists split, numbers as numbers, blanks left out', () => {
    expect(configFrom('email', { to: ' a@example.com, b@example.com ,' })).toEqual({ to: ['a@example.com', 'b@example.com'] });
    expect(configFrom('ntfy', { url: 'https://ntfy.sh/topic', token: '', priority: '4' })).toEqual({
      url: 'https://ntfy.sh/topic',
      priority: 4,
    });
    expect(configFrom('telegram', { botToken: '', chatId: '-100' })).toEqual({ chatId: '-100' });
    // What does not read as a number goes as typed: the API's 400 names the field.
    expect(configFrom('gotify', { url: 'https://g.example.com', token: 't', priority: 'high' })).toMatchObject({ priority: 'high' });
  });

  it('fills an edit form from a channel with its secret fields blank, so that saving keeps them', () => {
    const values = valuesFrom('ntfy', { url: 'https://ntfy.example.com/********', priority: 3 });
    expect(values).toEqual({ url: '', token: '', priority: '3' });
    expect(configFrom('ntfy', values)).toEqual({ priority: 3 });
    expect(valuesFrom('email', { to: ['a@example.com', 'b@example.com'] })).toEqual({ to: 'a@example.com, b@example.com' });
  });

  it('describes a target in one line', () => {
    expect(describeConfig({ to: ['a@example.com'], priority: 2 })).toBe('to: a@example.com; priority: 2');
  });
});
