/**
 * Erasure on request: a person's personal data, found by one of the
 * client's ids or by number (scope contacts:erase, and the operator).
 */
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { normalizePhone, PHONE_REFUSED } from '../../domain/contact.ts'
import { refuse, ValidationFailed, valueError } from '../../domain/errors.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import { type ErasureOperations, type ErasureReport, erasePerson } from '../../services/erasure.ts'
import { refine } from '../../validation/model.ts'
import { actorOf } from '../auth.ts'
import { envelope } from '../reply.ts'
import { authErrors, Envelope, notFound, Timestamp, validationErrors } from '../schemas.ts'
import { audiences } from './audiences.ts'
import { ExternalIdSchema } from './triggers.ts'
import { component } from '../openapi.ts'

const EraseBody = component('EraseContactRequest', Type.Object({
  id: Type.Optional({ ...ExternalIdSchema, description: 'One of your ids of the person, as sent with their triggers.' }),
  phone: Type.Optional(
    refine(Type.String({ maxLength: 64, description: 'Their number, in any form a trigger accepts.', examples: ['+44 20 7946 0958'] }), {
      check: (phone) => normalizePhone(phone) ?? refuse(PHONE_REFUSED),
    }),
  ),
}))

const ErasureSchema = component('Erasure', Type.Object({
  tasks: Type.Integer({ description: "The person's tasks found: each kept, with its status, outcome and attempts, and without their data." }),
  cancelled: Type.Integer({ description: 'Of those, the ones still open: now completed as cancelled (a task.completed event each).' }),
  contacts: Type.Integer({ description: 'Contacts on file deleted, with the ids that named them.' }),
  interactions: Type.Integer({ description: 'Calls and conversations with the person, now without their number.' }),
  suppressions: Type.Integer({ description: "The person's numbers that were suppressed: still suppressed, kept only as a keyed digest." }),
  consents: Type.Integer({ description: "Consents recorded for the person's numbers: kept as revocations only, by digest, without number or evidence." }),
  erased_at: Timestamp,
}))

const present = (report: ErasureReport): Static<typeof ErasureSchema> => ({
  tasks: report.tasks,
  cancelled: report.cancelled,
  contacts: report.contacts,
  interactions: report.interactions,
  suppressions: report.suppressions,
  consents: report.consents,
  erased_at: report.erasedAt,
})

export function contactRoutes(app: FastifyInstance, deps: { ops: ErasureOperations; authenticator: Authenticator }) {
  const { ops } = deps
  for (const audience of audiences({ db: ops.db, authenticator: deps.authenticator }, 'contacts')) {
    const { prefix, docs, params } = audience
    app.post(
      `${prefix}/contacts/erase`,
      {
        onRequest: audience.guard('contacts:erase'),
        schema: {
          ...docs,
          operationId: audience.operationId('eraseContact'),
          summary: "Erase a person's personal data",
          description:
            'By one of your ids of the person (`id`) or by their number (`phone`): one of the two. Their open tasks are cancelled; their name, number, email and the context sent with their triggers are removed from triggers, tasks, interactions and the contact directory. ' +
            "By id, the tasks found are those of the triggers that named the id and those of the triggers sent to the same numbers. Kept: each task's status, outcome and attempts (the task list still counts it), your ids on triggers and events (the webhooks already sent carry them), and a suppression of the number, as a keyed digest that a trigger sent to the number later still meets. " +
            'Recorded in the audit log. Erasing someone not found, or erased already, answers zeros.',
          params: Type.Object(params),
          body: EraseBody,
          response: { 200: Envelope(ErasureSchema), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const { id, phone } = request.body as Static<typeof EraseBody>
        if ((id === undefined) === (phone === undefined)) {
          throw new ValidationFailed([valueError(['body'], request.body, 'send one of id and phone: the person to erase')])
        }
        const person = id !== undefined ? { id } : { phone: phone! }
        const report = await erasePerson(ops, actorOf(request), await audience.orgId(request), person)
        return reply.send(envelope(request, present(report)))
      },
    )
  }
}
