import { Type } from '@sinclair/typebox'

export const OrgParams = Type.Object({ org_id: Type.String() })

/** What every admin route's OpenAPI entry shares. */
export const adminDocs = { tags: ['admin'], security: [{ operatorToken: [] }] }
