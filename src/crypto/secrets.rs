//! Key derivation (RFC 9001 §5.1-5.2, RFC 8446 §7.1) and key update
//! (RFC 9001 §6).

use super::{Algorithm, CryptoError, Hash, HeaderKey, PacketKey};
use crate::version::Version;

/// The QUIC v1 Initial salt (RFC 9001 §5.2).
pub const INITIAL_SALT_V1: [u8; 20] = *Version::V1.initial_salt();

const MAX_SECRET: usize = 48;

/// HKDF-Expand-Label (RFC 8446 §7.1) with an empty context: fills `out`
/// from `secret` (a PRK) and `label` (without the "tls13 " prefix).
pub fn hkdf_expand_label(hash: Hash, secret: &[u8], label: &[u8], out: &mut [u8]) -> Result<(), CryptoError> {
    // HkdfLabel { uint16 length; opaque label<7..255>; opaque context<0..255> }.
    const PREFIX: &[u8] = b"tls13 ";
    let mut info = [0u8; 2 + 1 + 255 + 1];
    let label_len = PREFIX.len() + label.len();
    let out_len = u16::try_from(out.len()).map_err(|_| CryptoError::BadKey)?;
    let label_len_u8 = u8::try_from(label_len).map_err(|_| CryptoError::BadKey)?;
    info[..2].copy_from_slice(&out_len.to_be_bytes());
    info[2] = label_len_u8;
    info[3..3 + PREFIX.len()].copy_from_slice(PREFIX);
    info[3 + PREFIX.len()..3 + label_len].copy_from_slice(label);
    info[3 + label_len] = 0; // empty context
    let info_len = 4 + label_len;
    // SAFETY: all buffers are valid for the lengths passed.
    let ok = unsafe {
        boring_sys::HKDF_expand(
            out.as_mut_ptr(),
            out.len(),
            hash.md(),
            secret.as_ptr(),
            secret.len(),
            info.as_ptr(),
            info_len,
        )
    };
    if ok != 1 {
        return Err(CryptoError::Internal);
    }
    Ok(())
}

fn hkdf_extract(hash: Hash, salt: &[u8], ikm: &[u8]) -> Result<[u8; MAX_SECRET], CryptoError> {
    let mut out = [0u8; MAX_SECRET];
    let mut out_len = 0usize;
    // SAFETY: out has room for any digest BoringSSL supports here (<= 48).
    let ok = unsafe {
        boring_sys::HKDF_extract(
            out.as_mut_ptr(),
            &mut out_len,
            hash.md(),
            ikm.as_ptr(),
            ikm.len(),
            salt.as_ptr(),
            salt.len(),
        )
    };
    if ok != 1 || out_len != hash.output_len() {
        return Err(CryptoError::Internal);
    }
    Ok(out)
}

/// A traffic secret of one direction and key phase, together with the cipher
/// suite it belongs to and the QUIC version whose labels derive its keys.
/// Zeroed on drop.
#[derive(Clone)]
pub struct Secret {
    alg: Algorithm,
    version: Version,
    bytes: [u8; MAX_SECRET],
    /// Its packet keys are the simulator's AEAD (kept across key updates).
    #[cfg(feature = "sim-aead")]
    sim: bool,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret").field("alg", &self.alg).finish_non_exhaustive()
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        // SAFETY: bytes is a valid writable buffer.
        unsafe { boring_sys::OPENSSL_cleanse(self.bytes.as_mut_ptr().cast(), self.bytes.len()) }
    }
}

impl Secret {
    /// A QUIC v1 secret for `alg`; `secret` must be as long as the suite's
    /// hash.
    pub fn new(alg: Algorithm, secret: &[u8]) -> Result<Secret, CryptoError> {
        if secret.len() != alg.hash().output_len() {
            return Err(CryptoError::BadKey);
        }
        let mut bytes = [0u8; MAX_SECRET];
        bytes[..secret.len()].copy_from_slice(secret);
        Ok(Secret {
            alg,
            version: Version::V1,
            bytes,
            #[cfg(feature = "sim-aead")]
            sim: false,
        })
    }

    /// The same secret, its keys derived with `version`'s labels.
    pub fn for_version(mut self, version: Version) -> Secret {
        self.version = version;
        self
    }

    /// The same secret, its packet keys the simulator's AEAD when `on`
    /// (same sizes, payload in clear, a keyed checksum as tag; never on a
    /// real network). Header protection stays real.
    #[cfg(feature = "sim-aead")]
    #[doc(hidden)]
    pub fn with_sim_aead(mut self, on: bool) -> Secret {
        self.sim = on;
        self
    }

    /// The cipher suite's AEAD.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The raw secret.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.alg.hash().output_len()]
    }

    /// The secret of the next key phase: HKDF-Expand-Label(secret,
    /// "quic ku", "", Hash.length) (RFC 9001 §6.1; "quicv2 ku" in v2).
    pub fn next(&self) -> Result<Secret, CryptoError> {
        let mut bytes = [0u8; MAX_SECRET];
        let len = self.alg.hash().output_len();
        hkdf_expand_label(self.alg.hash(), self.as_bytes(), self.version.labels().ku, &mut bytes[..len])?;
        let mut next = self.clone();
        next.bytes = bytes;
        Ok(next)
    }

    /// The packet-protection key ("quic key" and "quic iv", or v2's labels).
    pub fn packet_key(&self) -> Result<PacketKey, CryptoError> {
        let mut key = [0u8; 32];
        let mut iv = [0u8; 12];
        let key = &mut key[..self.alg.key_len()];
        let labels = self.version.labels();
        hkdf_expand_label(self.alg.hash(), self.as_bytes(), labels.key, key)?;
        hkdf_expand_label(self.alg.hash(), self.as_bytes(), labels.iv, &mut iv)?;
        #[cfg(feature = "sim-aead")]
        let pk =
            if self.sim { PacketKey::sim(self.alg, key, &iv) } else { PacketKey::new(self.alg, key, &iv) };
        #[cfg(not(feature = "sim-aead"))]
        let pk = PacketKey::new(self.alg, key, &iv);
        // SAFETY: key is a valid writable buffer.
        unsafe { boring_sys::OPENSSL_cleanse(key.as_mut_ptr().cast(), key.len()) };
        pk
    }

    /// The header-protection key ("quic hp" / "quicv2 hp").
    pub fn header_key(&self) -> Result<HeaderKey, CryptoError> {
        let mut key = [0u8; 32];
        let key = &mut key[..self.alg.key_len()];
        hkdf_expand_label(self.alg.hash(), self.as_bytes(), self.version.labels().hp, key)?;
        let hk = HeaderKey::new(self.alg, key);
        // SAFETY: key is a valid writable buffer.
        unsafe { boring_sys::OPENSSL_cleanse(key.as_mut_ptr().cast(), key.len()) };
        hk
    }

    /// All keys for this secret.
    pub fn keys(&self) -> Result<Keys, CryptoError> {
        Ok(Keys { packet: self.packet_key()?, header: self.header_key()?, secret: self.clone() })
    }
}

/// The keys of one direction at one encryption level: packet protection for
/// the current key phase, header protection (fixed for the connection's
/// lifetime at that level) and the secret, kept for key update.
#[derive(Debug)]
pub struct Keys {
    /// AEAD key and IV.
    pub packet: PacketKey,
    /// Header-protection key.
    pub header: HeaderKey,
    /// The traffic secret these keys came from.
    pub secret: Secret,
}

impl Keys {
    /// The keys of the next key phase (RFC 9001 §6): a new packet key from
    /// the "quic ku" secret; the header key is unchanged.
    pub fn next(&self) -> Result<Keys, CryptoError> {
        let secret = self.secret.next()?;
        Ok(Keys { packet: secret.packet_key()?, header: self.header.clone(), secret })
    }
}

/// Initial keys of `version` (RFC 9001 §5.2, RFC 9369 §3.3), from the
/// Destination Connection ID of the client's first Initial packet. Returns
/// `(local, remote)`: sealing keys for our packets, opening keys for the
/// peer's.
pub fn initial_keys(version: Version, dcid: &[u8], is_server: bool) -> Result<(Keys, Keys), CryptoError> {
    let alg = Algorithm::Aes128Gcm;
    let hash = alg.hash();
    let initial = hkdf_extract(hash, version.initial_salt(), dcid)?;
    let initial = &initial[..hash.output_len()];
    let mut client = [0u8; 32];
    let mut server = [0u8; 32];
    hkdf_expand_label(hash, initial, b"client in", &mut client)?;
    hkdf_expand_label(hash, initial, b"server in", &mut server)?;
    let client = Secret::new(alg, &client)?.for_version(version).keys()?;
    let server = Secret::new(alg, &server)?.for_version(version).keys()?;
    Ok(if is_server { (server, client) } else { (client, server) })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::crypto::test_util::hex;
    use crate::crypto::{apply_header_protection, remove_header_protection, TAG_LEN};

    pub(in crate::crypto) const DCID: &str = "8394c8f03e515708";

    #[test]
    fn initial_secrets_rfc9001_a1() {
        let initial = hkdf_extract(Hash::Sha256, &INITIAL_SALT_V1, &hex(DCID)).unwrap();
        assert_eq!(
            initial[..32].to_vec(),
            hex("7db5df06e7a69e432496adedb00851923595221596ae2ae9fb8115c1e9ed0a44")
        );
        let (client, server) = initial_keys(Version::V1, &hex(DCID), false).unwrap();
        assert_eq!(
            client.secret.as_bytes().to_vec(),
            hex("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea")
        );
        assert_eq!(
            server.secret.as_bytes().to_vec(),
            hex("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b")
        );
        assert_eq!(client.packet.iv().to_vec(), hex("fa044b2f42a3fd3b46fb255c"));
        assert_eq!(server.packet.iv().to_vec(), hex("0ac1493ca1905853b0bba03e"));
        let mut key = [0u8; 16];
        hkdf_expand_label(Hash::Sha256, client.secret.as_bytes(), b"quic key", &mut key).unwrap();
        assert_eq!(key.to_vec(), hex("1f369613dd76d5467730efcbe3b1a22d"));
        hkdf_expand_label(Hash::Sha256, server.secret.as_bytes(), b"quic key", &mut key).unwrap();
        assert_eq!(key.to_vec(), hex("cf3a5331653c364c88f0f379b6067e37"));
        hkdf_expand_label(Hash::Sha256, client.secret.as_bytes(), b"quic hp", &mut key).unwrap();
        assert_eq!(key.to_vec(), hex("9f50449e04a0e810283a1e9933adedd2"));
        hkdf_expand_label(Hash::Sha256, server.secret.as_bytes(), b"quic hp", &mut key).unwrap();
        assert_eq!(key.to_vec(), hex("c206b8d9b9f0f37644430b490eeaa314"));
        // Server side is the mirror image.
        let (s_local, s_remote) = initial_keys(Version::V1, &hex(DCID), true).unwrap();
        assert_eq!(s_local.secret.as_bytes(), server.secret.as_bytes());
        assert_eq!(s_remote.secret.as_bytes(), client.secret.as_bytes());
    }

    pub(in crate::crypto) const CLIENT_CRYPTO: &str =
        "060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868
        04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578
        616d706c652e636f6dff01000100000a 00080006001d00170018001000070005
        04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba
        baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400
        0d0010000e0403050306030203080408 050806002d00020101001c0002400100
        3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000
        75300901100f088394c8f03e51570806 048000ffff";

    const CLIENT_PACKET: &str = "c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11
        d242b123dc9bd8bab936b47d92ec356c 0bab7df5976d27cd449f63300099f399
        1c260ec4c60d17b31f8429157bb35a12 82a643a8d2262cad67500cadb8e7378c
        8eb7539ec4d4905fed1bee1fc8aafba1 7c750e2c7ace01e6005f80fcb7df6212
        30c83711b39343fa028cea7f7fb5ff89 eac2308249a02252155e2347b63d58c5
        457afd84d05dfffdb20392844ae81215 4682e9cf012f9021a6f0be17ddd0c208
        4dce25ff9b06cde535d0f920a2db1bf3 62c23e596d11a4f5a6cf3948838a3aec
        4e15daf8500a6ef69ec4e3feb6b1d98e 610ac8b7ec3faf6ad760b7bad1db4ba3
        485e8a94dc250ae3fdb41ed15fb6a8e5 eba0fc3dd60bc8e30c5c4287e53805db
        059ae0648db2f64264ed5e39be2e20d8 2df566da8dd5998ccabdae053060ae6c
        7b4378e846d29f37ed7b4ea9ec5d82e7 961b7f25a9323851f681d582363aa5f8
        9937f5a67258bf63ad6f1a0b1d96dbd4 faddfcefc5266ba6611722395c906556
        be52afe3f565636ad1b17d508b73d874 3eeb524be22b3dcbc2c7468d54119c74
        68449a13d8e3b95811a198f3491de3e7 fe942b330407abf82a4ed7c1b311663a
        c69890f4157015853d91e923037c227a 33cdd5ec281ca3f79c44546b9d90ca00
        f064c99e3dd97911d39fe9c5d0b23a22 9a234cb36186c4819e8b9c5927726632
        291d6a418211cc2962e20fe47feb3edf 330f2c603a9d48c0fcb5699dbfe58964
        25c5bac4aee82e57a85aaf4e2513e4f0 5796b07ba2ee47d80506f8d2c25e50fd
        14de71e6c418559302f939b0e1abd576 f279c4b2e0feb85c1f28ff18f58891ff
        ef132eef2fa09346aee33c28eb130ff2 8f5b766953334113211996d20011a198
        e3fc433f9f2541010ae17c1bf202580f 6047472fb36857fe843b19f5984009dd
        c324044e847a4f4a0ab34f719595de37 252d6235365e9b84392b061085349d73
        203a4a13e96f5432ec0fd4a1ee65accd d5e3904df54c1da510b0ff20dcc0c77f
        cb2c0e0eb605cb0504db87632cf3d8b4 dae6e705769d1de354270123cb11450e
        fc60ac47683d7b8d0f811365565fd98c 4c8eb936bcab8d069fc33bd801b03ade
        a2e1fbc5aa463d08ca19896d2bf59a07 1b851e6c239052172f296bfb5e724047
        90a2181014f3b94a4e97d117b4381303 68cc39dbb2d198065ae3986547926cd2
        162f40a29f0c3c8745c0f50fba3852e5 66d44575c29d39a03f0cda721984b6f4
        40591f355e12d439ff150aab7613499d bd49adabc8676eef023b15b65bfc5ca0
        6948109f23f350db82123535eb8a7433 bdabcb909271a6ecbcb58b936a88cd4e
        8f2e6ff5800175f113253d8fa9ca8885 c2f552e657dc603f252e1a8e308f76f0
        be79e2fb8f5d5fbbe2e30ecadd220723 c8c0aea8078cdfcb3868263ff8f09400
        54da48781893a7e49ad5aff4af300cd8 04a6b6279ab3ff3afb64491c85194aab
        760d58a606654f9f4400e8b38591356f bf6425aca26dc85244259ff2b19c41b9
        f96f3ca9ec1dde434da7d2d392b905dd f3d1f9af93d1af5950bd493f5aa731b4
        056df31bd267b6b90a079831aaf579be 0a39013137aac6d404f518cfd4684064
        7e78bfe706ca4cf5e9c5453e9f7cfd2b 8b4c8d169a44e55c88d4a9a7f9474241
        e221af44860018ab0856972e194cd934";

    /// Protects `header | payload` like a sender would: seal, then header
    /// protection.
    pub(in crate::crypto) fn protect(
        keys: &Keys,
        header: &[u8],
        payload: &[u8],
        pn: u64,
        pn_len: usize,
    ) -> Vec<u8> {
        let mut pkt = [header, payload, &[0u8; TAG_LEN]].concat();
        keys.packet.seal_packet(pn, 0, &mut pkt, header.len()).unwrap();
        apply_header_protection(&mut pkt, header.len() - pn_len, pn_len, &keys.header).unwrap();
        pkt
    }

    #[test]
    fn client_initial_rfc9001_a2() {
        let (client, _) = initial_keys(Version::V1, &hex(DCID), false).unwrap();
        let header = hex("c300000001088394c8f03e5157080000449e00000002");
        let mut payload = hex(CLIENT_CRYPTO);
        payload.resize(1162, 0); // PADDING
        let pkt = protect(&client, &header, &payload, 2, 4);
        assert_eq!(pkt, hex(CLIENT_PACKET));

        // And the server side removes protection.
        let (_, from_client) = initial_keys(Version::V1, &hex(DCID), true).unwrap();
        let mut rx = hex(CLIENT_PACKET);
        let pn_offset = header.len() - 4;
        assert_eq!(remove_header_protection(&mut rx, pn_offset, &from_client.header), Ok((4, 2)));
        assert_eq!(rx[..header.len()], header[..]);
        let n = from_client.packet.open_packet(2, 0, &mut rx, header.len()).unwrap();
        assert_eq!(rx[header.len()..header.len() + n], payload[..]);
    }

    #[test]
    fn server_initial_rfc9001_a3() {
        let (server, _) = initial_keys(Version::V1, &hex(DCID), true).unwrap();
        let header = hex("c1000000010008f067a5502a4262b50040750001");
        let payload = hex("02000000000600405a020000560303ee fce7f7b37ba1d1632e96677825ddf739
             88cfc79825df566dc5430b9a045a1200 130100002e00330024001d00209d3c94
             0d89690b84d08a60993c144eca684d10 81287c834d5311bcf32bb9da1a002b00
             020304");
        let expected = hex("cf000000010008f067a5502a4262b500 4075c0d95a482cd0991cd25b0aac406a
             5816b6394100f37a1c69797554780bb3 8cc5a99f5ede4cf73c3ec2493a1839b3
             dbcba3f6ea46c5b7684df3548e7ddeb9 c3bf9c73cc3f3bded74b562bfb19fb84
             022f8ef4cdd93795d77d06edbb7aaf2f 58891850abbdca3d20398c276456cbc4
             2158407dd074ee");
        assert_eq!(protect(&server, &header, &payload, 1, 2), expected);
        let (_, from_server) = initial_keys(Version::V1, &hex(DCID), false).unwrap();
        let mut rx = expected.clone();
        assert_eq!(remove_header_protection(&mut rx, 18, &from_server.header), Ok((2, 1)));
        let n = from_server.packet.open_packet(1, 0, &mut rx, header.len()).unwrap();
        assert_eq!(rx[header.len()..header.len() + n], payload[..]);
    }

    #[test]
    fn chacha_secret_and_ku_rfc9001_a5() {
        let secret = Secret::new(
            Algorithm::ChaCha20Poly1305,
            &hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"),
        )
        .unwrap();
        let keys = secret.keys().unwrap();
        assert_eq!(keys.packet.iv().to_vec(), hex("e0459b3474bdd0e44a41c144"));
        assert_eq!(
            secret.next().unwrap().as_bytes().to_vec(),
            hex("1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9")
        );
        // The whole A.5 packet from the secret.
        let pkt = protect(&keys, &hex("4200bff4"), &[0x01], 654360564, 3);
        assert_eq!(pkt, hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb"));
    }

    #[test]
    fn key_update_generation_one() {
        for alg in [Algorithm::Aes128Gcm, Algorithm::Aes256Gcm, Algorithm::ChaCha20Poly1305] {
            let raw: Vec<u8> = (0..alg.hash().output_len() as u8).collect();
            let gen0 = Secret::new(alg, &raw).unwrap().keys().unwrap();
            let gen0_peer = Secret::new(alg, &raw).unwrap().keys().unwrap();
            let gen1 = gen0.next().unwrap();
            let gen1_peer = gen0_peer.next().unwrap();
            assert_ne!(gen1.secret.as_bytes(), gen0.secret.as_bytes());
            assert_ne!(gen1.packet.iv(), gen0.packet.iv());
            // Header protection is unchanged across key updates.
            let sample = [0x55u8; 16];
            assert_eq!(gen1.header.mask(&sample), gen0.header.mask(&sample));
            let mut pkt = [&[0x41u8, 0, 7][..], b"after update", &[0u8; TAG_LEN]].concat();
            gen1.packet.seal_packet(7, 2, &mut pkt, 3).unwrap();
            // Generation-0 keys cannot open it; the peer's generation 1 can.
            assert_eq!(
                gen0_peer.packet.open_packet(7, 2, &mut pkt.clone(), 3),
                Err(CryptoError::DecryptFailed)
            );
            assert_eq!(gen1_peer.packet.open_packet(7, 2, &mut pkt, 3), Ok(12));
            assert_eq!(&pkt[3..15], b"after update");
        }
    }

    #[test]
    fn label_too_long_is_rejected() {
        let mut out = [0u8; 16];
        assert!(hkdf_expand_label(Hash::Sha256, &[0; 32], &[b'a'; 250], &mut out).is_err());
        assert!(Secret::new(Algorithm::Aes256Gcm, &[0; 32]).is_err());
    }
}
