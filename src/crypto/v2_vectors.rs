//! RFC 9369 Appendix A: QUIC v2's sample packet protection (the v1 vectors
//! of RFC 9001 Appendix A are beside the code, in `secrets` and `retry`).

use super::secrets::tests::{protect, CLIENT_CRYPTO, DCID};
use super::test_util::hex;
use super::{hkdf_expand_label, initial_keys, remove_header_protection, Algorithm, Hash, Secret};
use crate::version::Version;

fn expand(secret: &[u8], label: &[u8], len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    hkdf_expand_label(Hash::Sha256, secret, label, &mut out).unwrap();
    out
}

#[test]
fn initial_keys_a1() {
    let (client, server) = initial_keys(Version::V2, &hex(DCID), false).unwrap();
    let c = client.secret.as_bytes();
    assert_eq!(c.to_vec(), hex("14ec9d6eb9fd7af83bf5a668bc17a7e283766aade7ecd0891f70f9ff7f4bf47b"));
    assert_eq!(expand(c, b"quicv2 key", 16), hex("8b1a0bc121284290a29e0971b5cd045d"));
    assert_eq!(client.packet.iv().to_vec(), hex("91f73e2351d8fa91660e909f"));
    assert_eq!(expand(c, b"quicv2 hp", 16), hex("45b95e15235d6f45a6b19cbcb0294ba9"));
    let s = server.secret.as_bytes();
    assert_eq!(s.to_vec(), hex("0263db1782731bf4588e7e4d93b7463907cb8cd8200b5da55a8bd488eafc37c1"));
    assert_eq!(expand(s, b"quicv2 key", 16), hex("82db637861d55e1d011f19ea71d5d2a7"));
    assert_eq!(server.packet.iv().to_vec(), hex("dd13c276499c0249d3310652"));
    assert_eq!(expand(s, b"quicv2 hp", 16), hex("edf6d05c83121201b436e16877593c3a"));
}

const CLIENT_PACKET: &str = "d76b3343cf088394c8f03e5157080000449ea0c95e82ffe67b6abcdb4298b485
    dd04de806071bf03dceebfa162e75d6c96058bdbfb127cdfcbf903388e99ad04 9f9a3dd4425ae4d0992cfff18ecf0fdb5a842d09747052f17ac2053d21f57c5d
    250f2c4f0e0202b70785b7946e992e58a59ac52dea6774d4f03b55545243cf1a 12834e3f249a78d395e0d18f4d766004f1a2674802a747eaa901c3f10cda5500
    cb9122faa9f1df66c392079a1b40f0de1c6054196a11cbea40afb6ef5253cd68 18f6625efce3b6def6ba7e4b37a40f7732e093daa7d52190935b8da58976ff33
    12ae50b187c1433c0f028edcc4c2838b6a9bfc226ca4b4530e7a4ccee1bfa2a3 d396ae5a3fb512384b2fdd851f784a65e03f2c4fbe11a53c7777c023462239dd
    6f7521a3f6c7d5dd3ec9b3f233773d4b46d23cc375eb198c63301c21801f6520 bcfb7966fc49b393f0061d974a2706df8c4a9449f11d7f3d2dcbb90c6b877045
    636e7c0c0fe4eb0f697545460c806910d2c355f1d253bc9d2452aaa549e27a1f ac7cf4ed77f322e8fa894b6a83810a34b361901751a6f5eb65a0326e07de7c12
    16ccce2d0193f958bb3850a833f7ae432b65bc5a53975c155aa4bcb4f7b2c4e5 4df16efaf6ddea94e2c50b4cd1dfe06017e0e9d02900cffe1935e0491d77ffb4
    fdf85290fdd893d577b1131a610ef6a5c32b2ee0293617a37cbb08b847741c3b 8017c25ca9052ca1079d8b78aebd47876d330a30f6a8c6d61dd1ab5589329de7
    14d19d61370f8149748c72f132f0fc99f34d766c6938597040d8f9e2bb522ff9 9c63a344d6a2ae8aa8e51b7b90a4a806105fcbca31506c446151adfeceb51b91
    abfe43960977c87471cf9ad4074d30e10d6a7f03c63bd5d4317f68ff325ba3bd 80bf4dc8b52a0ba031758022eb025cdd770b44d6d6cf0670f4e990b22347a7db
    848265e3e5eb72dfe8299ad7481a408322cac55786e52f633b2fb6b614eaed18 d703dd84045a274ae8bfa73379661388d6991fe39b0d93debb41700b41f90a15
    c4d526250235ddcd6776fc77bc97e7a417ebcb31600d01e57f32162a8560cacc 7e27a096d37a1a86952ec71bd89a3e9a30a2a26162984d7740f81193e8238e61
    f6b5b984d4d3dfa033c1bb7e4f0037febf406d91c0dccf32acf423cfa1e70710 10d3f270121b493ce85054ef58bada42310138fe081adb04e2bd901f2f13458b
    3d6758158197107c14ebb193230cd1157380aa79cae1374a7c1e5bbcb80ee23e 06ebfde206bfb0fcbc0edc4ebec309661bdd908d532eb0c6adc38b7ca7331dce
    8dfce39ab71e7c32d318d136b6100671a1ae6a6600e3899f31f0eed19e3417d1 34b90c9058f8632c798d4490da4987307cba922d61c39805d072b589bd52fdf1
    e86215c2d54e6670e07383a27bbffb5addf47d66aa85a0c6f9f32e59d85a44dd 5d3b22dc2be80919b490437ae4f36a0ae55edf1d0b5cb4e9a3ecabee93dfc6e3
    8d209d0fa6536d27a5d6fbb17641cde27525d61093f1b28072d111b2b4ae5f89 d5974ee12e5cf7d5da4d6a31123041f33e61407e76cffcdcfd7e19ba58cf4b53
    6f4c4938ae79324dc402894b44faf8afbab35282ab659d13c93f70412e85cb19 9a37ddec600545473cfb5a05e08d0b209973b2172b4d21fb69745a262ccde96b
    a18b2faa745b6fe189cf772a9f84cbfc";

#[test]
fn client_initial_a2() {
    let (client, _) = initial_keys(Version::V2, &hex(DCID), false).unwrap();
    let header = hex("d36b3343cf088394c8f03e5157080000449e00000002");
    let mut payload = hex(CLIENT_CRYPTO);
    payload.resize(1162, 0); // PADDING
    assert_eq!(protect(&client, &header, &payload, 2, 4), hex(CLIENT_PACKET));
    // The server opens it with its own v2 keys, and not with v1's.
    let (_, from_client) = initial_keys(Version::V2, &hex(DCID), true).unwrap();
    let mut rx = hex(CLIENT_PACKET);
    assert_eq!(remove_header_protection(&mut rx, header.len() - 4, &from_client.header), Ok((4, 2)));
    assert_eq!(rx[..header.len()], header[..]);
    let n = from_client.packet.open_packet(2, 0, &mut rx, header.len()).unwrap();
    assert_eq!(rx[header.len()..header.len() + n], payload[..]);
    let (_, v1) = initial_keys(Version::V1, &hex(DCID), true).unwrap();
    let mut rx = hex(CLIENT_PACKET);
    let _ = remove_header_protection(&mut rx, header.len() - 4, &v1.header);
    assert!(v1.packet.open_packet(2, 0, &mut rx, header.len()).is_err());
}

#[test]
fn server_initial_a3() {
    let (server, _) = initial_keys(Version::V2, &hex(DCID), true).unwrap();
    let header = hex("d16b3343cf0008f067a5502a4262b50040750001");
    let payload = hex("02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739
        88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94
        0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00 020304");
    let expected = hex("dc6b3343cf0008f067a5502a4262b5004075d92faaf16f05d8a4398c47089698
        baeea26b91eb761d9b89237bbf87263017915358230035f7fd3945d88965cf17
        f9af6e16886c61bfc703106fbaf3cb4cfa52382dd16a393e42757507698075b2
        c984c707f0a0812d8cd5a6881eaf21ceda98f4bd23f6fe1a3e2c43edd9ce7ca8 4bed8521e2e140");
    assert_eq!(protect(&server, &header, &payload, 1, 2), expected);
}

#[test]
fn chacha_short_header_a5() {
    let secret = Secret::new(
        Algorithm::ChaCha20Poly1305,
        &hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"),
    )
    .unwrap()
    .for_version(Version::V2);
    let keys = secret.keys().unwrap();
    assert_eq!(keys.packet.iv().to_vec(), hex("a6b5bc6ab7dafce30ffff5dd"));
    assert_eq!(
        secret.next().unwrap().as_bytes().to_vec(),
        hex("c69374c49e3d2a9466fa689e49d476db5d0dfbc87d32ceeaa6343fd0ae4c7d88")
    );
    let pkt = protect(&keys, &hex("4200bff4"), &[0x01], 654360564, 3);
    assert_eq!(pkt, hex("5558b1c60ae7b6b932bc27d786f4bc2bb20f2162ba"));
}
