/**
 * Webhook URLs are chosen by client organizations, and the service POSTs to
 * them from inside our network: without these checks a client could make us
 * call our own databases, the cloud metadata endpoint or anything else only
 * reachable from here (server-side request forgery). The URL is judged once at
 * registration, so that the client hears why at once, and every address a
 * hostname resolves to is judged again at delivery (see httpPoster.ts),
 * because a name that was public yesterday can point inward today.
 */
import { isIP } from 'node:net'

const MAX_URL_LENGTH = 2048

/**
 * Why `raw` cannot be a webhook URL, as one sentence for a 422 answer, or
 * undefined when it can. `allowPrivate` is for local development and tests,
 * where the receiver is on this machine and plain http is the norm.
 */
export function webhookUrlProblem(raw: string, allowPrivate: boolean): string | undefined {
  if (raw.length > MAX_URL_LENGTH) return `url must be at most ${MAX_URL_LENGTH} characters long`
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'url must be an absolute URL'
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) return 'url must use https'
  if (url.username !== '' || url.password !== '') return 'url must not contain a username or password'
  // `hash` is empty for a bare trailing "#", which still marks a fragment; a "#" anywhere else in href would be percent-encoded.
  if (url.href.includes('#')) return 'url must not have a fragment'
  if (allowPrivate) return undefined

  // WHATWG URL has already turned 0x7f000001, 2130706433, 0177.0.0.1 and 127.1 into 127.0.0.1, and compressed IPv6.
  const host = url.hostname
  const literal = host.startsWith('[') ? host.slice(1, -1) : isIP(host) === 4 ? host : undefined
  if (literal !== undefined) {
    return isPublicAddress(literal) ? undefined : 'url must not point to a private, loopback or link-local address'
  }
  // A trailing dot makes a name absolute without changing where it resolves: "localhost." is localhost.
  const name = host.replace(/\.+$/, '')
  if (name === 'localhost' || /\.(localhost|local|internal)$/.test(name)) {
    return 'url must not point to a local or internal host name'
  }
  if (!name.includes('.')) return 'url host must be a fully qualified domain name'
  return undefined
}

/**
 * Whether `ip` (as DNS or a URL gives it, IPv6 without brackets) is an address
 * on the public internet. Anything this cannot parse is not public: refusing
 * is the safe answer to an address we do not understand.
 */
export function isPublicAddress(ip: string): boolean {
  // A zone id only means something for scoped (link-local, site-local) addresses, which are never public.
  if (ip.includes('%')) return false
  switch (isIP(ip)) {
    case 4:
      return isPublicIpv4(parseIpv4(ip))
    case 6:
      return isPublicIpv6(parseIpv6(ip))
    default:
      return false
  }
}

/** The special-purpose IPv4 blocks (IANA registry, RFC 6890 and successors) that no webhook receiver may use. */
const NON_PUBLIC_V4 = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local, including the 169.254.169.254 metadata endpoint
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // documentation
  '192.88.99.0/24', // 6to4 relay anycast
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // documentation
  '203.0.113.0/24', // documentation
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, including 255.255.255.255 broadcast
].map((cidr) => {
  const [base = '', bits = ''] = cidr.split('/')
  const prefix = Number(bits)
  // `>>> 0` keeps the mask unsigned; a /0 would need special care, but no block here is one.
  const mask = (~0 << (32 - prefix)) >>> 0
  return { base: (parseIpv4(base) & mask) >>> 0, mask }
})

function isPublicIpv4(address: number): boolean {
  return !NON_PUBLIC_V4.some(({ base, mask }) => ((address & mask) >>> 0) === base)
}

function parseIpv4(text: string): number {
  // isIP has already refused anything but four decimal octets without leading zeros.
  return text.split('.').reduce((value, octet) => value * 256 + Number(octet), 0)
}

function parseIpv6(text: string): bigint {
  // isIP has already checked the syntax: at most one "::", at most one trailing dotted quad, at most 8 groups.
  const groups = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [Number.parseInt(group, 16)]
          const v4 = parseIpv4(group)
          return [v4 >>> 16, v4 & 0xffff]
        })
  const [left = '', right] = text.split('::')
  const head = groups(left)
  const tail = right === undefined ? [] : groups(right)
  const all = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail]
  return all.reduce((value, group) => (value << 16n) | BigInt(group), 0n)
}

function v6Block(cidr: string): (address: bigint) => boolean {
  const [base = '', bits = ''] = cidr.split('/')
  const shift = BigInt(128 - Number(bits))
  const prefix = parseIpv6(base) >> shift
  return (address) => address >> shift === prefix
}

const V4_MAPPED = v6Block('::ffff:0:0/96')
const V4_TRANSLATED = v6Block('::ffff:0:0:0/96')
const NAT64 = v6Block('64:ff9b::/96')
const V4_COMPATIBLE = v6Block('::/96')
const SIX_TO_FOUR = v6Block('2002::/16')
const GLOBAL_UNICAST = v6Block('2000::/3')
const NON_PUBLIC_GLOBAL_UNICAST = [
  '2001::/23', // IETF protocol assignments, including Teredo 2001::/32 and benchmarking 2001:2::/48
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation (RFC 9637)
].map(v6Block)

function isPublicIpv6(address: bigint): boolean {
  // These forms reach an IPv4 host, so they are exactly as public as that host.
  if (V4_MAPPED(address) || V4_TRANSLATED(address) || NAT64(address)) return isPublicIpv4(Number(address & 0xffffffffn))
  // Covers ::, ::1 and the deprecated IPv4-compatible ::a.b.c.d, which no public host uses and some stacks still route to IPv4.
  if (V4_COMPATIBLE(address)) return false
  if (SIX_TO_FOUR(address)) return isPublicIpv4(Number((address >> 80n) & 0xffffffffn))
  // Every unicast allocation the internet routes lies in 2000::/3; outside it are ULA fc00::/7,
  // link-local fe80::/10, site-local fec0::/10, multicast ff00::/8, discard 100::/64 and the local-use NAT64 64:ff9b:1::/48.
  return GLOBAL_UNICAST(address) && !NON_PUBLIC_GLOBAL_UNICAST.some((inBlock) => inBlock(address))
}
