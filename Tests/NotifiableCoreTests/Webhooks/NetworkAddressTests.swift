import NotifiableCore
import Testing

@Suite struct NetworkAddressTests {
    @Test(arguments: [
        "127.0.0.1", "127.8.9.10", "10.0.0.5", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "0.0.0.0",
        "100.64.0.1", "100.127.255.255", "224.0.0.1", "255.255.255.255",
        "::1", "::", "fe80::1", "fe80::1%eth0", "febf::1", "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.1.2.3",
        "0:0:0:0:0:0:0:1",
    ])
    func internalAddresses(_ address: String) {
        #expect(NetworkAddress.isInternal(address) == true)
    }

    @Test(arguments: [
        "8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1", "192.169.0.1", "169.253.1.1",
        "223.255.255.255", "2001:4860:4860::8888", "2606:4700::1111", "::ffff:8.8.8.8", "fec0::1",
    ])
    func publicAddresses(_ address: String) {
        #expect(NetworkAddress.isInternal(address) == false)
    }

    /// Spellings the C library's resolver reads as addresses (octal, hexadecimal, one number) are not
    /// addresses to this strict reading: WebhookTargets resolves them and classifies the bytes.
    @Test(arguments: [
        "localhost", "example.com", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1::2::3", "12345::1", ":::", "", "01.2.3.4x",
        "012.0.0.1", "0x7f.1", "2130706433",
    ])
    func namesAndNonsenseAreNotAddresses(_ text: String) {
        #expect(NetworkAddress.isInternal(text) == nil)
    }

    @Test(arguments: [
        ("::ffff:10.0.0.2", "10.0.0.2"), ("10.0.0.2", "10.0.0.2"), ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"), ("fe80::1%eth0", "fe80::1"),
    ])
    func addressesHaveOneSpelling(_ text: String, _ canonical: String) {
        #expect(NetworkAddress.canonical(text) == canonical)
    }
}
