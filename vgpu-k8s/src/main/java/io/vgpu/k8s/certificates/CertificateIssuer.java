package io.vgpu.k8s.certificates;

import java.io.IOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.List;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Makes ECDSA P-256 keys and X.509 certificates: self-signed authorities, and server and client
 * certificates they sign. Every certificate is backdated by five minutes, so that a clock a little
 * behind the API server's does not reject it.
 */
public final class CertificateIssuer {
  private static final Duration BACKDATE = Duration.ofMinutes(5);
  private static final String SIGNATURE = "SHA256withECDSA";
  private static final SecureRandom RANDOM = new SecureRandom();

  private CertificateIssuer() {}

  /**
   * A certificate and its private key.
   *
   * @param certificate the certificate
   * @param key its private key
   */
  public record Issued(X509Certificate certificate, PrivateKey key) {
    /** The certificate as PEM. */
    public String certificatePem() {
      try {
        return pem("CERTIFICATE", certificate.getEncoded());
      } catch (GeneralSecurityException e) {
        throw new IllegalStateException("cannot encode a certificate: " + e.getMessage(), e);
      }
    }

    /** The private key as PKCS#8 PEM ({@code PRIVATE KEY}). */
    public String keyPem() {
      return pem("PRIVATE KEY", key.getEncoded());
    }
  }

  /** A self-signed certificate authority valid from now for {@code validity}. */
  public static Issued authority(String commonName, Instant now, Duration validity) throws IOException {
    KeyPair keys = keys();
    X500Name name = name(commonName);
    try {
      X509v3CertificateBuilder builder = builder(name, name, keys, now, validity);
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
      builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      builder.addExtension(Extension.subjectKeyIdentifier, false, new JcaX509ExtensionUtils().createSubjectKeyIdentifier(keys.getPublic()));
      return new Issued(sign(builder, keys.getPrivate()), keys.getPrivate());
    } catch (GeneralSecurityException | CertIOException e) {
      throw new IOException("cannot make a certificate authority: " + e.getMessage(), e);
    }
  }

  /**
   * A TLS server certificate signed by {@code ca} for these DNS names and IP addresses.
   *
   * @throws IllegalArgumentException when an IP address is not a literal address
   */
  public static Issued server(Issued ca, List<String> dnsNames, List<String> ipAddresses, Instant now, Duration validity) throws IOException {
    List<GeneralName> names = new ArrayList<>();
    dnsNames.forEach(n -> names.add(new GeneralName(GeneralName.dNSName, n)));
    for (String ip : ipAddresses) {
      if (!ip.matches("[0-9.]+|[0-9a-fA-F:]+")) {
        throw new IllegalArgumentException("'" + ip + "' is not an IP address");
      }
      names.add(new GeneralName(GeneralName.iPAddress, InetAddress.getByName(ip).getHostAddress()));
    }
    String commonName = dnsNames.isEmpty() ? (ipAddresses.isEmpty() ? "vgpu-scheduler" : ipAddresses.get(0)) : dnsNames.get(0);
    return leaf(ca, commonName, KeyPurposeId.id_kp_serverAuth, names, now, validity);
  }

  /** A TLS client certificate signed by {@code ca}. */
  public static Issued client(Issued ca, String commonName, Instant now, Duration validity) throws IOException {
    return leaf(ca, commonName, KeyPurposeId.id_kp_clientAuth, List.of(), now, validity);
  }

  private static Issued leaf(Issued ca, String commonName, KeyPurposeId purpose, List<GeneralName> names, Instant now, Duration validity) throws IOException {
    KeyPair keys = keys();
    try {
      X500Name issuer = X500Name.getInstance(ca.certificate().getSubjectX500Principal().getEncoded());
      X509v3CertificateBuilder builder = builder(issuer, name(commonName), keys, now, validity);
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
      builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
      builder.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(purpose));
      builder.addExtension(Extension.authorityKeyIdentifier, false, new JcaX509ExtensionUtils().createAuthorityKeyIdentifier(ca.certificate()));
      if (!names.isEmpty()) {
        builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names.toArray(GeneralName[]::new)));
      }
      return new Issued(sign(builder, ca.key()), keys.getPrivate());
    } catch (GeneralSecurityException | CertIOException e) {
      throw new IOException("cannot issue a certificate for " + commonName + ": " + e.getMessage(), e);
    }
  }

  private static X509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair keys, Instant now, Duration validity) {
    BigInteger serial = new BigInteger(127, RANDOM).add(BigInteger.ONE);
    return new JcaX509v3CertificateBuilder(issuer, serial, Date.from(now.minus(BACKDATE)), Date.from(now.plus(validity)), subject, keys.getPublic());
  }

  private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey signer) throws GeneralSecurityException {
    try {
      return new JcaX509CertificateConverter().getCertificate(builder.build(new JcaContentSignerBuilder(SIGNATURE).build(signer)));
    } catch (OperatorCreationException e) {
      throw new GeneralSecurityException(e.getMessage(), e);
    }
  }

  private static X500Name name(String commonName) {
    return new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.CN, commonName).build();
  }

  private static KeyPair keys() throws IOException {
    try {
      KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
      generator.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
      return generator.generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IOException("cannot make an EC P-256 key: " + e.getMessage(), e);
    }
  }

  static String pem(String type, byte[] der) {
    String body = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
    return "-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n";
  }
}
