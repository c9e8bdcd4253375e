/**
 * Who a request comes from, behind load balancers: the socket's peer, unless that peer is one of
 * the trusted proxies (BUBBLE_TRUSTED_PROXIES), in which case the right-most address of
 * `X-Forwarded-For` that is not itself trusted. IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`,
 * what a dual-stack socket reports for an IPv4 peer) are IPv4 addresses here.
 */

/** 4 bytes (IPv4) or 16 bytes (IPv6). */
export type IpBytes = Uint8Array;

export interface Cidr {
  readonly bytes: IpBytes;
  readonly prefix: number;
}

export interface ClientAddress {
  /** The address in canonical text form (dotted IPv4, RFC 5952 IPv6). */
  readonly address: string;
  /** What the per-address limits count by: the address, or its /64 for IPv6. */
  readonly bucket: string;
}

const IPV4_PART = /^(0|[1-9]\d{0,2})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

function parseIpv4(text: string): IpBytes | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i]!;
    if (!IPV4_PART.test(part)) return null;
    const value = Number(part);
    if (value > 255) return null;
    bytes[i] = value;
  }
  return bytes;
}

function parseGroups(text: string, allowTrailingIpv4: boolean): number[] | null {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (allowTrailingIpv4 && i === parts.length - 1 && part.includes('.')) {
      const v4 = parseIpv4(part);
      if (!v4) return null;
      groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    } else {
      if (!HEX_GROUP.test(part)) return null;
      groups.push(parseInt(part, 16));
    }
  }
  return groups;
}

function parseIpv6(text: string): IpBytes | null {
  const halves = text.split('::');
  if (halves.length > 2) return null;
  let groups: number[];
  if (halves.length === 2) {
    const head = parseGroups(halves[0]!, false);
    const tail = parseGroups(halves[1]!, true);
    if (!head || !tail || head.length + tail.length > 7) return null;
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  } else {
    const all = parseGroups(text, true);
    if (!all || all.length !== 8) return null;
    groups = all;
  }
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  });
  return bytes;
}

function isIpv4Mapped(bytes: IpBytes): boolean {
  if (bytes.length !== 16) return false;
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

/**
 * Parses an IPv4 or IPv6 address (a zone such as `%eth0` is dropped). An IPv4-mapped IPv6
 * address comes back as its 4 IPv4 bytes. Null when `text` is not an address.
 */
export function parseIp(text: string): IpBytes | null {
  const trimmed = text.trim();
  if (trimmed.includes(':')) {
    const bytes = parseIpv6(trimmed.replace(/%[\w.-]+$/, ''));
    if (bytes && isIpv4Mapped(bytes)) return bytes.slice(12);
    return bytes;
  }
  return parseIpv4(trimmed);
}

/** Canonical text: dotted decimal, or RFC 5952 (lower case, the longest zero run as `::`). */
export function formatIp(bytes: IpBytes): string {
  if (bytes.length === 4) return bytes.join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  let bestStart = -1;
  let bestLength = 1;
  for (let start = 0; start < 8;) {
    if (groups[start] !== 0) {
      start++;
      continue;
    }
    let end = start;
    while (end < 8 && groups[end] === 0) end++;
    if (end - start > bestLength) {
      bestStart = start;
      bestLength = end - start;
    }
    start = end;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/**
 * `10.0.0.0/8`, `fd00::/8`, or a bare address (one host). An IPv4-mapped IPv6 range of /96 or
 * narrower is the IPv4 range it maps. Throws naming what is wrong.
 */
export function parseCidr(text: string): Cidr {
  const trimmed = text.trim();
  const slash = trimmed.indexOf('/');
  const addressText = slash < 0 ? trimmed : trimmed.slice(0, slash);
  const prefixText = slash < 0 ? undefined : trimmed.slice(slash + 1);
  const isV6Text = addressText.includes(':');
  const raw = isV6Text ? parseIpv6(addressText) : parseIpv4(addressText);
  if (!raw) throw new Error(`"${text}" is not an IPv4 or IPv6 address or CIDR range`);
  const width = raw.length * 8;
  let prefix = width;
  if (prefixText !== undefined) {
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > width) {
      throw new Error(`"${text}": the prefix length must be 0 to ${width}`);
    }
    prefix = Number(prefixText);
  }
  if (isIpv4Mapped(raw) && prefix >= 96) return { bytes: raw.slice(12), prefix: prefix - 96 };
  return { bytes: raw, prefix };
}

export function cidrContains(cidr: Cidr, ip: IpBytes): boolean {
  if (cidr.bytes.length !== ip.length) return false;
  const whole = Math.floor(cidr.prefix / 8);
  for (let i = 0; i < whole; i++) if (cidr.bytes[i] !== ip[i]) return false;
  const rest = cidr.prefix % 8;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (cidr.bytes[whole]! & mask) === (ip[whole]! & mask);
}

/** A comma-separated list of ranges (BUBBLE_TRUSTED_PROXIES). */
export function parseCidrList(text: string): Cidr[] {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map(parseCidr);
}

/**
 * One `X-Forwarded-For` entry: an address, `[v6]`, `[v6]:port` or `v4:port` (some proxies
 * append the port). Null for anything else (`unknown`, obfuscated names, garbage).
 */
function parseForwardedEntry(entry: string): IpBytes | null {
  const trimmed = entry.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(trimmed);
  if (bracketed) return parseIp(bracketed[1]!);
  const v4WithPort = /^([\d.]+):\d{1,5}$/.exec(trimmed);
  if (v4WithPort) return parseIpv4(v4WithPort[1]!);
  return parseIp(trimmed);
}

function bucketOf(bytes: IpBytes): string {
  if (bytes.length === 4) return formatIp(bytes);
  // One IPv6 host is usually given a whole /64: counting per address would let it mint buckets.
  const network = new Uint8Array(16);
  network.set(bytes.subarray(0, 8));
  return `${formatIp(network)}/64`;
}

export class ClientAddressResolver {
  constructor(private readonly trusted: readonly Cidr[] = []) {}

  isTrusted(ip: IpBytes): boolean {
    return this.trusted.some((cidr) => cidrContains(cidr, ip));
  }

  /**
   * `peer` is the socket's remote address; `forwardedFor` the request's X-Forwarded-For (node
   * joins repeated headers with commas). Walking from the right, every trusted hop is skipped;
   * the first untrusted address is the client. Should a trusted proxy have written something
   * that is not an address, the walk stops at the last trusted hop rather than believe what
   * lies to the left of it; when every hop is trusted, the left-most one is the client.
   */
  resolve(peer: string | undefined, forwardedFor: string | string[] | undefined): ClientAddress {
    const peerBytes = peer === undefined ? null : parseIp(peer);
    if (!peerBytes) {
      const address = peer ?? 'unknown';
      return { address, bucket: address };
    }
    let client = peerBytes;
    if (forwardedFor !== undefined && this.trusted.length > 0 && this.isTrusted(peerBytes)) {
      const header = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor;
      const entries = header.split(',');
      for (let i = entries.length - 1; i >= 0; i--) {
        const hop = parseForwardedEntry(entries[i]!);
        if (!hop) break;
        client = hop;
        if (!this.isTrusted(hop)) break;
      }
    }
    return { address: formatIp(client), bucket: bucketOf(client) };
  }
}
