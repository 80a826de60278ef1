import { initTRPC } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { inputPlanOf, PathTemplate, restInputOf } from '../../adapters/http/rest-inputs.js';
import { queryInt, strictInt } from '../../src/platform/input-schemas.js';

const t = initTRPC.create();
const url = (query: string) => new URL(`http://127.0.0.1/api/x?${query}`);

describe('REST path templates', () => {
  const template = new PathTemplate('/api/services/{serviceId}/overview');

  it('names the parameters, with or without a trailing slash, in any letter case', () => {
    expect(template.match('/api/services/svc_1/overview')).toEqual({ serviceId: 'svc_1' });
    expect(template.match('/api/services/svc_1/overview/')).toEqual({ serviceId: 'svc_1' });
    expect(template.match('/API/Services/svc_1/Overview')).toEqual({ serviceId: 'svc_1' });
  });

  it('refuses other paths, empty parameters and extra segments', () => {
    expect(template.match('/api/services/svc_1')).toBeNull();
    expect(template.match('/api/services//overview')).toBeNull();
    expect(template.match('/api/services/a/b/overview')).toBeNull();
    expect(template.match('/api/projects/svc_1/overview')).toBeNull();
  });
});

describe('REST inputs', () => {
  const listing = t.procedure
    .input(
      z.strictObject({
        projectId: z.string(),
        limit: z.number().int().optional(),
        page: queryInt(1, 100).optional(),
        archived: z.boolean().optional(),
        port: strictInt(1, 65535).optional(),
        status: z.array(z.enum(['live', 'failed'])).optional(),
        sizes: z.array(z.number()).default([]),
      }),
    )
    .query(() => null);
  const plan = inputPlanOf(listing);

  it('reads a GET query: numbers and booleans from text, lists from one or more values, empty values left out', () => {
    const input = restInputOf(plan, {
      method: 'GET',
      url: url('limit=20&page=3&archived=false&port=8080&status=live&sizes=1&sizes=2.5&projectId=ignored&empty='),
      body: undefined,
      pathParams: { projectId: 'prj_1' },
    });
    expect(input).toEqual({ projectId: 'prj_1', limit: 20, page: '3', archived: false, port: 8080, status: ['live'], sizes: [1, 2.5] });
  });

  it('leaves text that is not a number or boolean as text, so validation names the field; unknown fields are kept', async () => {
    const input = restInputOf(plan, {
      method: 'GET',
      url: url('limit=ten&archived=yes&color=red'),
      body: undefined,
      pathParams: { projectId: 'p' },
    });
    expect(input).toEqual({ projectId: 'p', limit: 'ten', archived: 'yes', color: 'red' });
    const caller = t.createCallerFactory(t.router({ listing }))({});
    const error = await caller.listing(input as never).catch((e: Error) => e);
    expect(String(error)).toMatch(/limit/);
    const unknown = await caller.listing({ projectId: 'p', color: 'red' } as never).catch((e: Error) => e);
    expect(String(unknown)).toMatch(/color/);
  });

  it('takes a JSON body as sent (no conversion) with the path parameters over it', () => {
    const update = t.procedure.input(z.strictObject({ serviceId: z.string(), replicas: z.number() })).mutation(() => null);
    const input = restInputOf(inputPlanOf(update), {
      method: 'PATCH',
      url: url('replicas=2'),
      body: { replicas: '3', serviceId: 'other' },
      pathParams: { serviceId: 'svc_1' },
    });
    expect(input).toEqual({ replicas: '3', serviceId: 'svc_1' });
  });

  it('joins a DELETE body to its query, values kept as sent', () => {
    const remove = t.procedure
      .input(
        z.strictObject({ serviceId: z.string(), table: z.string(), primaryKey: z.record(z.string(), z.unknown()).transform((key) => key) }),
      )
      .mutation(() => null);
    const input = restInputOf(inputPlanOf(remove), {
      method: 'DELETE',
      url: url('table=users'),
      body: { primaryKey: { id: 0 } },
      pathParams: { serviceId: 'svc_1' },
    });
    expect(input).toEqual({ serviceId: 'svc_1', table: 'users', primaryKey: { id: 0 } });
  });

  it('calls a procedure without input with none, and one without .input() with an empty object', () => {
    const none = t.procedure.input(z.void()).query(() => null);
    const bare = t.procedure.query(() => null);
    expect(restInputOf(inputPlanOf(none), { method: 'GET', url: url('a=1'), body: undefined, pathParams: {} })).toBeUndefined();
    expect(restInputOf(inputPlanOf(bare), { method: 'GET', url: url(''), body: undefined, pathParams: {} })).toEqual({});
  });

  it('does not change the schema: the typed client still refuses text for a number', async () => {
    const caller = t.createCallerFactory(t.router({ listing }))({});
    restInputOf(plan, { method: 'GET', url: url('limit=5'), body: undefined, pathParams: { projectId: 'p' } });
    const error = await caller.listing({ projectId: 'p', limit: '5' } as never).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
  });
});
