import 'reflect-metadata';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import * as asn1X509 from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import { KeyObject, randomBytes, sign as nodeSign, webcrypto } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { createSecureContext, DEFAULT_CIPHERS, type SecureContext } from 'node:tls';
import { ensurePrivateDir, type CapsemHome } from '../store/paths.ts';

// The per-install CA the proxy signs its leaf certificates with: ECDSA P-256 through
// @peculiar/x509, kept under CAPSEM_HOME/ca (key 0600), reused across runs and renewed well
// before it expires. Leaves share one key per run and are made from one template (only the serial,
// names and validity change, encoded with @peculiar/asn1-x509 and signed by node:crypto); they are
// held in a bounded LRU.

// ECDSA signing straight through node:crypto: WebCrypto's sign hops to the thread pool and back,
// which was half of a leaf's issue time. Everything else stays WebCrypto.
const subtle = webcrypto.subtle;
const signingCrypto = {
  getRandomValues: webcrypto.getRandomValues.bind(webcrypto),
  subtle: new Proxy(subtle, {
    get(target, prop) {
      if (prop === 'sign') {
        return async (
          algorithm: { name: string; hash?: string | { name: string } },
          key: CryptoKey,
          data: BufferSource,
        ): Promise<ArrayBuffer> => {
          if (algorithm.name !== 'ECDSA') return target.sign(algorithm as never, key, data);
          const bytes = ArrayBuffer.isView(data)
            ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
            : Buffer.from(data as ArrayBuffer);
          const hash = typeof algorithm.hash === 'string' ? algorithm.hash : (algorithm.hash?.name ?? 'SHA-256');
          const signature = nodeSign(hash.replace('-', '').toLowerCase(), bytes, {
            key: KeyObject.from(key as never),
            dsaEncoding: 'ieee-p1363',
          });
          return signature.buffer.slice(signature.byteOffset, signature.byteOffset + signature.byteLength) as ArrayBuffer;
        };
      }
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }),
};
x509.cryptoProvider.set(signingCrypto as unknown as Crypto);
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;
const CA_LIFETIME_DAYS = 825;
const RENEW_BEFORE_DAYS = 30;
const LEAF_LIFETIME_DAYS = 30;
const LEAF_CACHE = 1000;
/**
 * The order a client-facing TLS server offers its ciphers in (and chooses by):
 *  - `aes-gcm-first`: Node's defaults with AES-128-GCM first. Clients (curl) offer AES-256 first,
 *    and AES-128 is as safe and faster wherever AES runs in hardware.
 *  - `chacha20-first`: for a guest whose CPU is emulated (TCG). There AES-NI is one helper call
 *    per instruction, and scalar ChaCha20-Poly1305 decrypts faster than AES-GCM.
 */
export type CipherOrder = 'aes-gcm-first' | 'chacha20-first';
const firstOf = (suite: string): string => [suite, ...DEFAULT_CIPHERS.split(':').filter((c) => c !== suite)].join(':');
const CIPHERS: Readonly<Record<CipherOrder, string>> = {
  'aes-gcm-first': firstOf('TLS_AES_128_GCM_SHA256'),
  'chacha20-first': firstOf('TLS_CHACHA20_POLY1305_SHA256'),
};

/** One host's leaf, with a TLS context per cipher order made from it when first asked for. */
interface Leaf {
  readonly certPem: string;
  readonly keyPem: string;
  readonly contexts: Partial<Record<CipherOrder, SecureContext>>;
}

/**
 * A certificate serial from 16 random bytes, as DER wants it: positive (top bit clear) and minimal
 * (first byte not zero). A zero first byte made one leaf in 256 unreadable to OpenSSL ("illegal
 * padding"), and its host unreachable through the proxy.
 */
export function serialFrom(random: Uint8Array): string {
  const bytes = Buffer.from(random.subarray(0, 16));
  bytes[0] = (bytes[0]! & 0x7f) | 0x40;
  return bytes.toString('hex');
}

function serial(): string {
  return serialFrom(randomBytes(16));
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n');
  return `-----BEGIN ${label}-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END ${label}-----\n`;
}

/** PEM with a final newline, so certificates can be concatenated into a chain. */
function pemOf(cert: x509.X509Certificate): string {
  return `${cert.toString('pem').trimEnd()}\n`;
}

function derOf(text: string): Buffer {
  return Buffer.from(text.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

interface LeafTemplate {
  readonly tbsCertificate: asn1X509.TBSCertificate;
  readonly signatureAlgorithm: asn1X509.AlgorithmIdentifier;
  readonly sharedExtensions: readonly asn1X509.Extension[];
  readonly signingKey: KeyObject;
  /** The one key every leaf shares, matching the template's public key. */
  readonly leafKeyPem: string;
}

export interface CaFiles {
  readonly certPath: string;
  readonly keyPath: string;
}

export function caFiles(home: CapsemHome): CaFiles {
  return { certPath: join(home.root, 'ca', 'capsem-ca.crt'), keyPath: join(home.root, 'ca', 'capsem-ca.key') };
}

export class CertificateAuthority {
  private readonly leaves = new Map<string, Leaf>();
  /** Leaves being made: the many connections a client opens at once to one host share one. */
  private readonly pendingLeaves = new Map<string, Promise<Leaf>>();
  // A promise, so connections arriving together wait for one template (and one key) rather than
  // each making its own and pairing a certificate with another's key.
  private leafTemplate: Promise<LeafTemplate> | null = null;

  private constructor(
    readonly cert: x509.X509Certificate,
    private readonly key: CryptoKey,
    readonly certPem: string,
  ) {}

  /** Loads the CA from CAPSEM_HOME, creating it on first start or renewing it when it nears expiry. */
  static async load(home: CapsemHome, now = new Date()): Promise<CertificateAuthority> {
    const files = caFiles(home);
    if (existsSync(files.certPath) && existsSync(files.keyPath)) {
      const cert = new x509.X509Certificate(readFileSync(files.certPath, 'utf8'));
      const certPem = pemOf(cert);
      if (cert.notAfter.getTime() - now.getTime() > RENEW_BEFORE_DAYS * DAY) {
        const key = await webcrypto.subtle.importKey('pkcs8', derOf(readFileSync(files.keyPath, 'utf8')), ALG, false, ['sign']);
        return new CertificateAuthority(cert, key as CryptoKey, certPem);
      }
    }
    return CertificateAuthority.create(files, now);
  }

  private static async create(files: CaFiles, now: Date): Promise<CertificateAuthority> {
    const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: `CN=Capsem Local CA ${now.toISOString().slice(0, 10)}, O=Capsem Desktop`,
      notBefore: new Date(now.getTime() - DAY),
      notAfter: new Date(now.getTime() + CA_LIFETIME_DAYS * DAY),
      signingAlgorithm: ALG,
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    const dir = join(files.certPath, '..');
    ensurePrivateDir(dir);
    const keyPem = pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
    // Write then rename, so a crash never leaves a certificate without its key.
    writeFileSync(`${files.keyPath}.tmp`, keyPem, { mode: 0o600 });
    writeFileSync(`${files.certPath}.tmp`, pemOf(cert), { mode: 0o644 });
    renameSync(`${files.keyPath}.tmp`, files.keyPath);
    renameSync(`${files.certPath}.tmp`, files.certPath);
    return new CertificateAuthority(cert, keys.privateKey, pemOf(cert));
  }

  /** A TLS context for `host` (a name or an IP address), signed by this CA; cached. */
  async contextFor(host: string, order: CipherOrder = 'aes-gcm-first'): Promise<SecureContext> {
    const leaf = await this.leafFor(host.toLowerCase());
    return (leaf.contexts[order] ??= createSecureContext({
      cert: leaf.certPem + this.certPem,
      key: leaf.keyPem,
      ciphers: CIPHERS[order],
      honorCipherOrder: true,
    }));
  }

  private leafFor(name: string): Promise<Leaf> | Leaf {
    const cached = this.leaves.get(name);
    if (cached) {
      this.leaves.delete(name);
      this.leaves.set(name, cached);
      return cached;
    }
    const pending = this.pendingLeaves.get(name);
    if (pending) return pending;
    const made = this.issueLeaf(name)
      .then(({ certPem, keyPem }) => {
        const leaf: Leaf = { certPem, keyPem, contexts: {} };
        this.leaves.set(name, leaf);
        if (this.leaves.size > LEAF_CACHE) this.leaves.delete(this.leaves.keys().next().value!);
        return leaf;
      })
      .finally(() => this.pendingLeaves.delete(name));
    this.pendingLeaves.set(name, made);
    return made;
  }

  async issueLeaf(host: string, now = new Date()): Promise<{ certPem: string; keyPem: string }> {
    const template = await (this.leafTemplate ??= this.makeLeafTemplate(now).catch((err: unknown) => {
      this.leafTemplate = null;
      throw err;
    }));
    // Only the serial, the names and the validity differ between leaves: change them in the
    // template's TBSCertificate, encode it, and sign it with node:crypto. Building each leaf with
    // the generator encoded and then parsed the whole certificate again (most of a leaf's cost).
    const tbs = template.tbsCertificate;
    const serialBytes = Buffer.from(serial(), 'hex');
    tbs.serialNumber = serialBytes.buffer.slice(serialBytes.byteOffset, serialBytes.byteOffset + serialBytes.byteLength) as ArrayBuffer;
    tbs.subject = new asn1X509.Name([
      new asn1X509.RelativeDistinguishedName([
        new asn1X509.AttributeTypeAndValue({ type: '2.5.4.3', value: new asn1X509.AttributeValue({ utf8String: host }) }),
      ]),
    ]);
    tbs.validity = new asn1X509.Validity({
      notBefore: new Date(now.getTime() - DAY),
      notAfter: new Date(Math.min(now.getTime() + LEAF_LIFETIME_DAYS * DAY, this.cert.notAfter.getTime())),
    });
    const name = isIP(host) ? new asn1X509.GeneralName({ iPAddress: host }) : new asn1X509.GeneralName({ dNSName: host });
    tbs.extensions = new asn1X509.Extensions([
      ...template.sharedExtensions,
      new asn1X509.Extension({
        extnID: asn1X509.id_ce_subjectAltName,
        critical: false,
        extnValue: new OctetString(AsnConvert.serialize(new asn1X509.SubjectAlternativeName([name]))),
      }),
    ]);
    const tbsDer = Buffer.from(AsnConvert.serialize(tbs));
    const signature = nodeSign('sha256', tbsDer, { key: template.signingKey, dsaEncoding: 'der' });
    const cert = new asn1X509.Certificate({
      tbsCertificate: tbs,
      signatureAlgorithm: template.signatureAlgorithm,
      signatureValue: signature.buffer.slice(signature.byteOffset, signature.byteOffset + signature.byteLength) as ArrayBuffer,
    });
    return { certPem: pem('CERTIFICATE', AsnConvert.serialize(cert)), keyPem: template.leafKeyPem };
  }

  /** One leaf made by the generator, kept as the pattern for every other: the shared key and extensions. */
  private async makeLeafTemplate(now: Date): Promise<LeafTemplate> {
    const leafKeys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
    const made = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: 'CN=template.invalid',
      issuer: this.cert.subject,
      notBefore: new Date(now.getTime() - DAY),
      notAfter: new Date(now.getTime() + DAY),
      signingAlgorithm: ALG,
      publicKey: leafKeys.publicKey,
      signingKey: this.key,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        await x509.AuthorityKeyIdentifierExtension.create(this.cert),
      ],
    });
    const parsed = AsnConvert.parse(made.rawData, asn1X509.Certificate);
    return {
      tbsCertificate: parsed.tbsCertificate,
      signatureAlgorithm: parsed.signatureAlgorithm,
      sharedExtensions: [...(parsed.tbsCertificate.extensions ?? [])],
      signingKey: KeyObject.from(this.key),
      leafKeyPem: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey)),
    };
  }

  get cachedLeaves(): number {
    return this.leaves.size;
  }
}
