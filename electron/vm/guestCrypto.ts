import type { CipherOrder } from '../proxy/certificateAuthority.ts';
import type { Accelerator } from './accel.ts';

// TLS in the guest, tuned to how its CPU runs. Under TCG, QEMU emulates each SIMD instruction
// through a helper call, so OpenSSL's vector code is slower than its scalar code. Measured in a
// TCG guest here (openssl speed, 16 KiB blocks), with AVX and SSSE3 masked: ChaCha20-Poly1305 went
// from 33-56 to 98-129 MB/s, AES-128-GCM from 21-29 to 36-47 MB/s, and a 64 MiB guest curl
// download through the proxy (ChaCha20 then) from 7-11 to 13-15 MiB/s.
// With KVM the guest runs the host's CPU and needs none of it.

/**
 * OpenSSL's capability mask (OPENSSL_ia32cap): clears AVX and SSSE3 in CPUID leaf 1 and AVX2 in
 * leaf 7, so every OpenSSL in the guest (curl's, python's, node's) takes its scalar paths.
 */
const SCALAR_OPENSSL = '~0x1000020000000000:~0x20';

/** Environment for every process in a guest on this accelerator. */
export function guestCryptoEnv(accel: Accelerator): Record<string, string> {
  return accel === 'tcg' ? { OPENSSL_ia32cap: SCALAR_OPENSSL } : {};
}

/** The cipher order the proxy offers TLS clients inside a guest on this accelerator. */
export function guestCipherOrder(accel: Accelerator): CipherOrder {
  return accel === 'tcg' ? 'chacha20-first' : 'aes-gcm-first';
}
