/**
 * Session messages: what a client may send a person in a conversation the
 * person keeps open (WhatsApp's customer service window,
 * domain/messagingWindow.ts): a text, reply buttons or a list, as a channel
 * with session messages sends them (whatsappCloud/sessionMessages.ts). The
 * bounds are WhatsApp's, the one such channel (Cloud API reference,
 * "Messages": text body 4,096 characters; reply buttons 1 to 3,
 * each title 20 characters and id 256, their body 1,024; a list's button
 * 20, body 4,096, 1 to 10 sections with 10 rows in all, a row's title 24,
 * description 72 and id 200, a section's title 24 and required once there
 * are several): a message past them is refused here, field by field, rather
 * than by Meta after the request.
 */
import { type Static, Type } from '@sinclair/typebox'
import { type Refusal, refuse } from '../domain/errors.ts'

const text = (maxLength: number, description: string) => Type.String({ minLength: 1, maxLength, description })

const Button = Type.Object(
  { id: text(256, 'Sent back as the reply’s id when the person taps it.'), title: text(20, 'What the button says.') },
  { additionalProperties: false },
)

const Row = Type.Object(
  {
    id: text(200, 'Sent back as the reply’s id when the person chooses it.'),
    title: text(24, 'What the row says.'),
    description: Type.Optional(text(72, 'A line under the title.')),
  },
  { additionalProperties: false },
)

const Section = Type.Object(
  { title: Type.Optional(text(24, 'Required once there are several sections.')), rows: Type.Array(Row, { minItems: 1, maxItems: 10 }) },
  { additionalProperties: false },
)

const Buttons = Type.Object(
  { body: text(1024, 'The message above the buttons.'), options: Type.Array(Button, { minItems: 1, maxItems: 3 }) },
  { additionalProperties: false, description: 'Reply buttons: the person taps one, and its title comes back as their message.' },
)

const List = Type.Object(
  {
    body: text(4096, 'The message above the list’s button.'),
    button: text(20, 'What the button that opens the list says.'),
    sections: Type.Array(Section, { minItems: 1, maxItems: 10 }),
  },
  { additionalProperties: false, description: 'A list the person opens and chooses one row of; its title comes back as their message.' },
)

/** One message: exactly one of `text`, `buttons` or `list` (sessionMessageProblems says so of one that is not). */
export const SessionMessageSchema = Type.Object(
  { text: Type.Optional(text(4096, 'A text message.')), buttons: Type.Optional(Buttons), list: Type.Optional(List) },
  { additionalProperties: false, description: 'Exactly one of `text`, `buttons` (reply buttons) or `list`.' },
)

export type SessionMessageContent = Static<typeof SessionMessageSchema>

/** What a message within the schema's bounds still breaks of Meta's rules, each at its field: ids and titles told apart, the rows' count, the sections' titles. */
export function sessionMessageProblems(content: SessionMessageContent): { loc: (string | number)[]; refusal: Refusal }[] {
  const problems: { loc: (string | number)[]; refusal: Refusal }[] = []
  const kinds = (['text', 'buttons', 'list'] as const).filter((kind) => content[kind] !== undefined)
  if (kinds.length !== 1) {
    problems.push({ loc: [], refusal: refuse(`a message is exactly one of text, buttons or list; this one has ${kinds.length === 0 ? 'none' : kinds.join(' and ')}`) })
  }
  const distinct = (values: string[], loc: (index: number) => (string | number)[], what: string) => {
    const seen = new Set<string>()
    values.forEach((value, index) => {
      if (seen.has(value)) problems.push({ loc: loc(index), refusal: refuse(`another ${what} is '${value}' already: WhatsApp takes each once`) })
      seen.add(value)
    })
  }
  if (content.buttons !== undefined) {
    const { options } = content.buttons
    distinct(options.map((option) => option.id), (index) => ['buttons', 'options', index, 'id'], 'button’s id')
    distinct(options.map((option) => option.title), (index) => ['buttons', 'options', index, 'title'], 'button’s title')
  }
  if (content.list !== undefined) {
    const { sections } = content.list
    const rows = sections.flatMap((section, index) => section.rows.map((row, at) => ({ row, loc: ['list', 'sections', index, 'rows', at] })))
    if (rows.length > 10) problems.push({ loc: ['list', 'sections'], refusal: refuse(`a list holds 10 rows in all, across its sections; this one has ${rows.length}`) })
    distinct(rows.map(({ row }) => row.id), (index) => [...rows[index]!.loc, 'id'], 'row’s id')
    if (sections.length > 1) {
      sections.forEach((section, index) => {
        if (section.title === undefined) problems.push({ loc: ['list', 'sections', index, 'title'], refusal: refuse('a list of several sections names each one') })
      })
    }
  }
  return problems
}

/** What of a message a text channel (SMS) cannot carry: anything but `text`, and a text past its limit. */
export function textOnlyProblems(content: SessionMessageContent, maxLength: number): { loc: (string | number)[]; refusal: Refusal }[] {
  const problems: { loc: (string | number)[]; refusal: Refusal }[] = []
  for (const kind of ['buttons', 'list'] as const) {
    if (content[kind] !== undefined) problems.push({ loc: [kind], refusal: refuse(`an SMS carries text only: send the ${kind === 'buttons' ? 'buttons' : 'list'} as text`) })
  }
  if (content.text !== undefined && [...content.text].length > maxLength) problems.push({ loc: ['text'], refusal: refuse(`an SMS holds at most ${maxLength} characters`) })
  return problems
}

/** What a message says, as a transcript holds it: its text, or the body of its buttons or list with their choices. */
export function sessionMessageText(content: SessionMessageContent): string {
  if (content.buttons !== undefined) return `${content.buttons.body} [${content.buttons.options.map((option) => option.title).join(' | ')}]`
  if (content.list !== undefined) return `${content.list.body} [${content.list.sections.flatMap((section) => section.rows.map((row) => row.title)).join(' | ')}]`
  return content.text ?? ''
}
