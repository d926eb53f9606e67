import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { readVoicemail, voicemailTwiml } from '../src/channels/twilio/voicemail.ts'
import { chooseMessageText, MAX_SPOKEN_CHARACTERS, type MessageValues, renderMessageText } from '../src/domain/messageText.ts'

const values = (overrides: Partial<MessageValues> = {}): MessageValues => ({
  firstName: 'Ada',
  lastName: 'Lovelace',
  language: 'en-GB',
  context: { appointment_time: '10:30', clinic: { name: 'North' }, count: 3, confirmed: false, nothing: null, list: ['a'] },
  ...overrides,
})

describe('renderMessageText', () => {
  const cases: [name: string, template: string, expected: string, overrides?: Partial<MessageValues>][] = [
    ['no placeholders', 'Hello there.', 'Hello there.'],
    ['the contact', 'Hi {{first_name}} {{last_name}}', 'Hi Ada Lovelace'],
    ['spaces inside the braces', 'Hi {{ first_name }}', 'Hi Ada'],
    ['a context value', 'See you at {{context.appointment_time}}.', 'See you at 10:30.'],
    ['a nested context value', 'At {{context.clinic.name}}', 'At North'],
    ['numbers and booleans as text', '{{context.count}} {{context.confirmed}}', '3 false'],
    ['an unknown name renders empty', 'Hi {{nickname}}!', 'Hi !'],
    ['an unknown context key renders empty', 'At {{context.room}}.', 'At .'],
    ['null, arrays and objects render empty', '[{{context.nothing}}][{{context.list}}][{{context.clinic}}]', '[][][]'],
    ['a missing first name renders empty', 'Hi {{first_name}}.', 'Hi .', { firstName: undefined }],
    ['the language', '{{language}}', 'en-GB'],
    ['a value is XML-escaped', 'Hi {{first_name}}', 'Hi &lt;Say&gt;&amp;&quot;&apos;', { firstName: `<Say>&"'` }],
    ['so is the template', 'Fish & chips <b>', 'Fish &amp; chips &lt;b&gt;'],
    ['control characters are replaced', 'a{{first_name}}b', 'a\uFFFDb', { firstName: '\u0001' }],
    ['a value is not read again for placeholders', 'Hi {{first_name}}', 'Hi {{last_name}}', { firstName: '{{last_name}}' }],
    ['unclosed braces stay as written', 'Hi {{first_name', 'Hi {{first_name'],
    ['an own property only, never a prototype one', '{{context.toString}}', ''],
  ]
  for (const [name, template, expected, overrides] of cases) {
    test(name, () => assert.equal(renderMessageText(template, values(overrides)), expected))
  }

  test(`at most ${MAX_SPOKEN_CHARACTERS} characters are spoken`, () => {
    const rendered = renderMessageText('{{context.long}}', values({ context: { long: 'x'.repeat(MAX_SPOKEN_CHARACTERS + 50) } }))
    assert.equal(rendered.length, MAX_SPOKEN_CHARACTERS)
  })
})

describe('chooseMessageText', () => {
  const byLanguage = { en: 'Hello', 'de-DE': 'Hallo', 'pt-BR': 'Olá', pt: 'Olá!' }
  const cases: [name: string, text: string | Record<string, string>, language: string | undefined, expected: ReturnType<typeof chooseMessageText>][] = [
    ['one text, in the contact’s language', 'Hi', 'fr-FR', { text: 'Hi', language: 'fr-FR' }],
    ['one text, no language', 'Hi', undefined, { text: 'Hi', language: undefined }],
    ['the exact tag', byLanguage, 'pt-BR', { text: 'Olá', language: 'pt-BR' }],
    ['the exact tag, case aside', byLanguage, 'PT-br', { text: 'Olá', language: 'pt-BR' }],
    ['the language without its region', byLanguage, 'en-US', { text: 'Hello', language: 'en' }],
    ['the bare language before another region', byLanguage, 'pt-PT', { text: 'Olá!', language: 'pt' }],
    ['another region of the language', byLanguage, 'de-AT', { text: 'Hallo', language: 'de-DE' }],
    ['a bare language finds a tag with a region', byLanguage, 'de', { text: 'Hallo', language: 'de-DE' }],
    ['no match: the first tag in alphabetical order, whatever the order given', { 'pt-BR': 'Olá', en: 'Hello', de: 'Hallo' }, 'ja', { text: 'Hallo', language: 'de' }],
    ['no language: the first tag in alphabetical order', byLanguage, undefined, { text: 'Hallo', language: 'de-DE' }],
    ['no match: the text for any other language, in the default voice', { ...byLanguage, '*': 'Hi' }, 'ja', { text: 'Hi', language: undefined }],
    ['a match wins over "*"', { '*': 'Hi', en: 'Hello' }, 'en-US', { text: 'Hello', language: 'en' }],
  ]
  for (const [name, text, language, expected] of cases) {
    test(name, () => assert.deepEqual(chooseMessageText(text, language), expected))
  }
})

describe('voicemailTwiml', () => {
  test('speaks the text of the contact’s language in the contact’s locale (en-GB, never a bare "en"), then hangs up', () => {
    const settings = readVoicemail({ policy: 'leave_message', message: { text: { en: 'Hi {{first_name}}, see you at {{context.appointment_time}}.', de: 'Hallo {{first_name}}', '*': 'Hi' } } })
    assert.equal(
      voicemailTwiml(settings, values(), 'GB'),
      '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Say language="en-GB">Hi Ada, see you at 10:30.</Say><Hangup/></Response>',
    )
  })

  test('one text without a contact language: no language attribute', () => {
    const settings = readVoicemail({ policy: 'leave_message', message: { text: 'Call us back.' } })
    assert.equal(voicemailTwiml(settings, values({ language: undefined }), 'GB'), '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Say>Call us back.</Say><Hangup/></Response>')
  })

  // [contact's language, texts, country of the number, the <Say> language attribute (none: undefined)]
  const spoken: [string | undefined, string | Record<string, string>, string | undefined, string | undefined][] = [
    ['en-GB', 'Hi', 'US', 'en-GB'],
    ['en', 'Hi', 'GB', 'en-GB'],
    ['en', 'Hi', 'FR', 'en-US'],
    ['en', 'Hi', undefined, 'en-US'],
    ['EN-au', 'Hi', 'GB', 'en-AU'],
    ['es', 'Hola', 'US', 'es-US'],
    ['es', 'Hola', 'AR', 'es-ES'],
    ['pt', 'Olá', 'PT', 'pt-PT'],
    ['pt', 'Olá', undefined, 'pt-BR'],
    ['de-CH', 'Hallo', 'CH', 'de-DE'],
    ['de-CH', 'Hallo', 'AT', 'de-AT'],
    ['zh-Hant', '你好', undefined, 'zh-TW'],
    ['fil', 'Kumusta', undefined, 'fil-PH'],
    // Twilio voices Arabic only in regions CLDR does not name likeliest: no guess of a dialect.
    ['ar', 'مرحبا', 'EG', undefined],
    ['tlh', 'nuqneH', undefined, undefined],
    [undefined, { de: 'Hallo', en: 'Hi' }, 'GB', 'de-DE'],
    ['ja', { en: 'Hi', '*': 'Hello' }, 'JP', undefined],
    ['fr-CA', { fr: 'Bonjour', en: 'Hi' }, 'CA', 'fr-CA'],
    ['fr-CH', { 'fr-FR': 'Bonjour' }, 'CH', 'fr-FR'],
    ['pt', { 'pt-PT': 'Olá' }, 'US', 'pt-PT'],
    ['no', 'Hei', 'NO', 'nb-NO'],
    ['no-NO', 'Hei', undefined, 'nb-NO'],
  ]
  for (const [language, text, country, attribute] of spoken) {
    test(`a ${language ?? 'language-less'} contact, texts ${JSON.stringify(Object.keys(typeof text === 'string' ? { one: text } : text))}, a number of ${country ?? 'no country'}: ${attribute ?? 'no language attribute'}`, () => {
      const twiml = voicemailTwiml(readVoicemail({ policy: 'leave_message', message: { text } }), values({ language }), country)
      assert.equal(/<Say(?: language="([^"]+)")?>/.exec(twiml)?.[1], attribute, twiml)
    })
  }

  test('plays the recording, its URL escaped', () => {
    const settings = readVoicemail({ policy: 'leave_message', message: { audio_url: 'https://cdn.example.com/msg.mp3?a=1&b=2' } })
    assert.equal(
      voicemailTwiml(settings, values(), 'GB'),
      '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Play>https://cdn.example.com/msg.mp3?a=1&amp;b=2</Play><Hangup/></Response>',
    )
  })

  test('no setting reads as hang_up', () => {
    assert.deepEqual(readVoicemail(undefined), { policy: 'hang_up', text: undefined, audioUrl: undefined })
  })
})
