/**
 * The client address behind trusted proxies (packages/gateway/src/http/client-address.ts):
 * address parsing against node's own, CIDR membership against a BigInt reference, and
 * X-Forwarded-For chains with spaces, ports, garbage and IPv6.
 */
import net from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ClientAddressResolver,
  cidrContains,
  formatIp,
  parseCidr,
  parseCidrList,
  parseIp,
} from '../../packages/gateway/src/http/client-address.js';

const v4Bytes = fc.uint8Array({ minLength: 4, maxLength: 4 });
const v6Bytes = fc.uint8Array({ minLength: 16, maxLength: 16 });
const anyBytes = fc.oneof(v4Bytes, v6Bytes);

function toBigInt(bytes: Uint8Array): bigint {
  return bytes.reduce((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
}

function isMapped(bytes: Uint8Array): boolean {
  return (
    bytes.length === 16 &&
    bytes.subarray(0, 10).every((b) => b === 0) &&
    bytes[10] === 0xff &&
    bytes[11] === 0xff
  );
}

/** Membership by arithmetic on the whole address. */
function referenceContains(network: Uint8Array, prefix: number, ip: Uint8Array): boolean {
  if (network.length !== ip.length) return false;
  const width = BigInt(network.length * 8);
  const shift = width - BigInt(prefix);
  return toBigInt(network) >> shift === toBigInt(ip) >> shift;
}

describe('parseIp and formatIp', () => {
  it('round-trip every IPv4 and IPv6 address (IPv4-mapped ones come back as IPv4)', () => {
    fc.assert(
      fc.property(anyBytes, (bytes) => {
        const text = formatIp(bytes);
        expect(net.isIP(text)).toBe(bytes.length === 4 ? 4 : 6);
        const parsed = parseIp(text)!;
        expect([...parsed]).toEqual(isMapped(bytes) ? [...bytes.subarray(12)] : [...bytes]);
      }),
    );
  });

  it('writes IPv6 as the WHATWG URL serializer does (RFC 5952 compression)', () => {
    fc.assert(
      fc.property(v6Bytes, (bytes) => {
        fc.pre(!isMapped(bytes));
        expect(`[${formatIp(bytes)}]`).toBe(new URL(`http://[${formatIp(bytes)}]`).hostname);
      }),
    );
  });

  it('accepts exactly what node:net accepts, over near-addresses and strings of their characters', () => {
    const chars = fc.constantFrom(...'0123456789abcdefABCDEF:.'.split(''));
    const soup = fc.array(chars, { maxLength: 45 }).map((a) => a.join(''));
    // A real address with one character inserted, removed or replaced.
    const nearAddress = fc
      .tuple(anyBytes, fc.nat(), chars, fc.constantFrom('insert', 'remove', 'replace'))
      .map(([bytes, at, char, edit]) => {
        const text = formatIp(bytes);
        const i = at % (text.length + 1);
        if (edit === 'insert') return text.slice(0, i) + char + text.slice(i);
        if (edit === 'remove') return text.slice(0, i) + text.slice(i + 1);
        return text.slice(0, i) + char + text.slice(i + 1);
      });
    fc.assert(
      fc.property(fc.oneof(soup, nearAddress), (text) => {
        expect(parseIp(text) !== null, text).toBe(net.isIP(text) !== 0);
      }),
      { numRuns: 10_000 },
    );
  });

  it('parses the forms in the wild, and IPv4-mapped IPv6 as IPv4', () => {
    expect(formatIp(parseIp('::ffff:127.0.0.1')!)).toBe('127.0.0.1');
    expect(formatIp(parseIp('::FFFF:7f00:1')!)).toBe('127.0.0.1');
    expect(formatIp(parseIp('2001:DB8:0:0:0:0:0:1')!)).toBe('2001:db8::1');
    expect(formatIp(parseIp('fe80::1%eth0')!)).toBe('fe80::1');
    expect(formatIp(parseIp(' 10.1.2.3 ')!)).toBe('10.1.2.3');
    for (const bad of [
      '',
      'unknown',
      '1.2.3',
      '1.2.3.4.5',
      '256.1.1.1',
      '01.2.3.4',
      '1:2:3:4:5:6:7:8:9',
      ':::',
      '1::2::3',
    ]) {
      expect(parseIp(bad), bad).toBeNull();
    }
  });
});

describe('parseCidr and cidrContains', () => {
  it('agree with arithmetic on the whole address for every prefix', () => {
    fc.assert(
      fc.property(
        anyBytes.chain((network) =>
          fc.tuple(
            fc.constant(network),
            fc.integer({ min: 0, max: network.length * 8 }),
            fc.oneof(
              fc.uint8Array({ minLength: network.length, maxLength: network.length }),
              anyBytes,
            ),
          ),
        ),
        ([network, prefix, ip]) => {
          fc.pre(!isMapped(network) && !isMapped(ip));
          const cidr = parseCidr(`${formatIp(network)}/${prefix}`);
          expect(cidrContains(cidr, ip)).toBe(referenceContains(network, prefix, ip));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('a bare address is one host; an IPv4-mapped range is its IPv4 range', () => {
    const host = parseCidr('192.0.2.7');
    expect(cidrContains(host, parseIp('192.0.2.7')!)).toBe(true);
    expect(cidrContains(host, parseIp('192.0.2.8')!)).toBe(false);
    const mapped = parseCidr('::ffff:10.0.0.0/104');
    expect(cidrContains(mapped, parseIp('10.200.1.1')!)).toBe(true);
    expect(cidrContains(mapped, parseIp('11.0.0.1')!)).toBe(false);
    expect(cidrContains(parseCidr('0.0.0.0/0'), parseIp('::1')!)).toBe(false);
    expect(cidrContains(parseCidr('::/0'), parseIp('::1')!)).toBe(true);
  });

  it('refuses what is not a range, saying what is wrong', () => {
    expect(() => parseCidr('10.0.0.0/33')).toThrow(/prefix length must be 0 to 32/);
    expect(() => parseCidr('fd00::/129')).toThrow(/0 to 128/);
    expect(() => parseCidr('10.0.0.0/')).toThrow(/prefix/);
    expect(() => parseCidr('10.0.0.0/8/8')).toThrow(/prefix/);
    expect(() => parseCidr('example.com/8')).toThrow(/not an IPv4 or IPv6 address/);
    expect(parseCidrList(' 10.0.0.0/8 , ,fd00::/8')).toHaveLength(2);
  });
});

describe('ClientAddressResolver', () => {
  const trusted = parseCidrList('10.0.0.0/8,fd00::/8,127.0.0.1');
  const resolver = new ClientAddressResolver(trusted);
  const untrustedV4 = v4Bytes.filter(
    (b) => b[0] !== 10 && !(b[0] === 127 && b[1] === 0 && b[2] === 0 && b[3] === 1),
  );
  const untrustedV6 = v6Bytes.filter((b) => b[0] !== 0xfd && !isMapped(b));
  const untrusted = fc.oneof(untrustedV4, untrustedV6);
  const trustedHop = fc.oneof(
    v4Bytes.map((b) => Uint8Array.of(10, b[1]!, b[2]!, b[3]!)),
    v6Bytes.map((b) => Uint8Array.of(0xfd, ...b.subarray(1))),
  );
  const spaces = fc.constantFrom('', ' ', '  ', '\t');
  const garbage = fc.oneof(fc.string(), fc.constantFrom('unknown', '_hidden', '::::', '300.1.1.1'));

  it('from a trusted peer, the right-most untrusted address of the chain is the client', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(garbage, untrusted.map(formatIp)), { maxLength: 4 }),
        untrusted,
        fc.array(trustedHop, { maxLength: 4 }),
        trustedHop,
        spaces,
        (spoofed, client, hops, peer, pad) => {
          const chain = [
            ...spoofed.map((s) => s.replaceAll(',', '')),
            formatIp(client),
            ...hops.map(formatIp),
          ];
          const header = chain.map((entry) => `${pad}${entry}${pad}`).join(',');
          expect(resolver.resolve(formatIp(peer), header).address).toBe(formatIp(client));
        },
      ),
    );
  });

  it('from an untrusted peer, X-Forwarded-For is ignored whatever it says', () => {
    fc.assert(
      fc.property(untrusted, fc.string(), (peer, header) => {
        expect(resolver.resolve(formatIp(peer), header).address).toBe(formatIp(peer));
      }),
    );
  });

  it('garbage in the chain stops the walk at the last trusted hop; it never throws', () => {
    fc.assert(
      fc.property(
        trustedHop,
        fc.array(trustedHop, { maxLength: 3 }),
        garbage,
        (peer, hops, junk) => {
          fc.pre(parseIp(junk.split(',').at(-1) ?? '') === null && !junk.includes(','));
          const header = [junk, ...hops.map(formatIp)].join(', ');
          const expected = hops.length > 0 ? formatIp(hops[0]!) : formatIp(peer);
          expect(resolver.resolve(formatIp(peer), header).address).toBe(expected);
        },
      ),
    );
  });

  it('reads ports, brackets, repeated headers and IPv4-mapped peers', () => {
    expect(resolver.resolve('::ffff:127.0.0.1', '203.0.113.9').address).toBe('203.0.113.9');
    expect(resolver.resolve('127.0.0.1', '203.0.113.9:4711, 10.0.0.2').address).toBe('203.0.113.9');
    expect(resolver.resolve('127.0.0.1', '[2001:db8::7]:443').address).toBe('2001:db8::7');
    expect(resolver.resolve('127.0.0.1', ['198.51.100.1', '203.0.113.9']).address).toBe(
      '203.0.113.9',
    );
    expect(resolver.resolve('127.0.0.1', '10.0.0.3, 10.0.0.2').address).toBe('10.0.0.3');
    expect(resolver.resolve('127.0.0.1', '').address).toBe('127.0.0.1');
    expect(resolver.resolve('127.0.0.1', undefined).address).toBe('127.0.0.1');
    expect(new ClientAddressResolver().resolve('127.0.0.1', '203.0.113.9').address).toBe(
      '127.0.0.1',
    );
  });

  it('counts IPv6 clients by their /64 and IPv4 clients by address', () => {
    const a = resolver.resolve('2001:db8:1:2:aaaa::1', undefined);
    const b = resolver.resolve('2001:db8:1:2:bbbb::2', undefined);
    expect(a.address).not.toBe(b.address);
    expect(a.bucket).toBe('2001:db8:1:2::/64');
    expect(b.bucket).toBe(a.bucket);
    expect(resolver.resolve('::ffff:192.0.2.1', undefined).bucket).toBe('192.0.2.1');
  });
});
