/** An organization's tasks as its client and the console list them (GET /api/v2/tasks): newest first, a page at a time. */
import { ValidationFailed, valueError } from '../domain/errors.ts'
import type { Task } from '../domain/types.ts'
import type { Queryable } from '../store/database.ts'
import { listTasks, type TaskFilter, taskListPosition } from '../store/tasks.ts'

/**
 * The organization's tasks that pass `filter`, at most `limit`, listed after
 * the task `before` when given: the last of the previous page, which must be
 * one of the organization's tasks.
 */
export async function listOrganizationTasks(
  db: Queryable,
  orgId: string,
  page: { filter: Omit<TaskFilter, 'after'>; before?: string; limit: number },
): Promise<Task[]> {
  const after = page.before === undefined ? undefined : await taskListPosition(db, orgId, page.before)
  if (page.before !== undefined && after === undefined) {
    throw new ValidationFailed([valueError(['query', 'before'], page.before, 'before must be the id of one of your tasks, as listed on the previous page')])
  }
  return listTasks(db, orgId, { ...page.filter, after }, page.limit)
}
