import { ROWS_PAGE_LIMIT } from '../../src/databases/database-views.js';
import { ValidationError } from '../../src/domain/errors.js';

/**
 * A page of rows as every adapter takes it: `limit` within the API's bound (ROWS_PAGE_LIMIT, declared
 * once), `offset` from 0. Checked again here because adapters write both numbers into statements
 * (ClickHouse 18.16 binds nothing) and hold a page in memory whole.
 */
export function checkPage(page: { limit: number; offset: number }): { limit: number; offset: number } {
  if (!Number.isSafeInteger(page.limit) || page.limit < 1 || page.limit > ROWS_PAGE_LIMIT.max) {
    throw new ValidationError('limit', `limit must be an integer from 1 to ${ROWS_PAGE_LIMIT.max}`);
  }
  if (!Number.isSafeInteger(page.offset) || page.offset < 0) {
    throw new ValidationError('offset', 'offset must be an integer of 0 or more');
  }
  return { limit: page.limit, offset: page.offset };
}
