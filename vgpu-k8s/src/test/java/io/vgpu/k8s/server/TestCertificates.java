package io.vgpu.k8s.server;

import java.io.StringWriter;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.bouncycastle.asn1.ASN1Encodable;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.asn1.sec.ECPrivateKey;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.bouncycastle.util.io.pem.PemObject;
import org.jspecify.annotations.Nullable;

/**
 * Certificates made in-test: self-signed ones for 127.0.0.1 written as PEM in the formats Kubernetes
 * tooling uses, and small authorities issuing server and client certificates.
 */
public final class TestCertificates {
  /** The key formats of PEM files. */
  public enum KeyFormat {
    PKCS8_RSA,
    PKCS1_RSA,
    SEC1_EC
  }

  private TestCertificates() {}

  /**
   * A certificate and its keys.
   *
   * @param certificate the certificate
   * @param keys its key pair
   */
  public record Issued(X509Certificate certificate, KeyPair keys) {}

  /** A self-signed certificate authority. */
  public static Issued authority(String commonName) throws Exception {
    KeyPair pair = ecKeys();
    X500Name name = new X500Name("CN=" + commonName);
    Instant now = Instant.now();
    var builder =
        new JcaX509v3CertificateBuilder(
            name, BigInteger.valueOf(SERIAL.incrementAndGet()), Date.from(now.minus(Duration.ofDays(1))), Date.from(now.plus(Duration.ofDays(1))), name, pair.getPublic());
    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
    builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    return new Issued(new JcaX509CertificateConverter().getCertificate(builder.build(new JcaContentSignerBuilder("SHA256withECDSA").build(pair.getPrivate()))), pair);
  }

  /** A certificate for 127.0.0.1 signed by {@code ca}, for TLS servers or clients. */
  public static Issued issue(Issued ca, String commonName, boolean client) throws Exception {
    KeyPair pair = ecKeys();
    Instant now = Instant.now();
    var builder =
        new JcaX509v3CertificateBuilder(
            new X500Name(ca.certificate().getSubjectX500Principal().getName()), BigInteger.valueOf(SERIAL.incrementAndGet()),
            Date.from(now.minus(Duration.ofDays(1))), Date.from(now.plus(Duration.ofDays(1))), new X500Name("CN=" + commonName), pair.getPublic());
    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
    builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
    builder.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(client ? KeyPurposeId.id_kp_clientAuth : KeyPurposeId.id_kp_serverAuth));
    builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName(GeneralName.iPAddress, "127.0.0.1")));
    X509Certificate certificate =
        new JcaX509CertificateConverter().getCertificate(builder.build(new JcaContentSignerBuilder("SHA256withECDSA").build(ca.keys().getPrivate())));
    return new Issued(certificate, pair);
  }

  /** Writes the certificate and its PKCS#8 key as PEM. */
  public static void write(Issued issued, Path cert, Path key) throws Exception {
    Files.writeString(cert, pem(issued.certificate()));
    Files.writeString(key, pem(new JcaPKCS8Generator(issued.keys().getPrivate(), null).generate()));
  }

  /** Writes certificates as one PEM bundle. */
  public static void writeBundle(Path file, X509Certificate... certificates) throws Exception {
    StringBuilder out = new StringBuilder();
    for (X509Certificate c : certificates) {
      out.append(pem(c));
    }
    Files.writeString(file, out.toString());
  }

  /** A client context trusting {@code server} and presenting {@code client}, if given. */
  public static SSLContext client(X509Certificate server, @Nullable Issued client) throws Exception {
    KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
    trust.load(null, null);
    trust.setCertificateEntry("server", server);
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    KeyStore keys = KeyStore.getInstance(KeyStore.getDefaultType());
    keys.load(null, null);
    if (client != null) {
      keys.setKeyEntry("client", client.keys().getPrivate(), new char[0], new X509Certificate[] {client.certificate()});
    }
    kmf.init(keys, new char[0]);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
    return context;
  }

  private static KeyPair ecKeys() throws Exception {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"));
    return g.generateKeyPair();
  }

  private static final AtomicLong SERIAL = new AtomicLong(System.currentTimeMillis());

  /**
   * A key manager of a self-signed certificate for 127.0.0.1 made out to {@code commonName}, written
   * with its key in {@code format} into {@code dir} as {@code commonName.crt} and {@code commonName.key}.
   */
  public static ReloadingKeyManager keyManager(Path dir, String commonName, KeyFormat format) throws Exception {
    Path cert = dir.resolve(commonName + ".crt");
    Path key = dir.resolve(commonName + ".key");
    write(cert, key, commonName, format);
    return new ReloadingKeyManager(cert, key, Duration.ofSeconds(10), Clock.systemUTC());
  }

  /** Writes a self-signed certificate for 127.0.0.1 made out to {@code commonName}, and its key in {@code format}. */
  public static X509Certificate write(Path cert, Path key, String commonName, KeyFormat format) throws Exception {
    KeyPair pair;
    String signature;
    if (format == KeyFormat.SEC1_EC) {
      KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
      g.initialize(new ECGenParameterSpec("secp256r1"));
      pair = g.generateKeyPair();
      signature = "SHA256withECDSA";
    } else {
      KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
      g.initialize(2048);
      pair = g.generateKeyPair();
      signature = "SHA256withRSA";
    }
    Instant now = Instant.now();
    X500Name name = new X500Name("CN=" + commonName);
    var builder =
        new JcaX509v3CertificateBuilder(
            name, BigInteger.valueOf(now.toEpochMilli()), Date.from(now.minus(Duration.ofDays(1))), Date.from(now.plus(Duration.ofDays(1))), name, pair.getPublic());
    builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName(GeneralName.iPAddress, "127.0.0.1")));
    X509Certificate certificate =
        new JcaX509CertificateConverter().getCertificate(builder.build(new JcaContentSignerBuilder(signature).build(pair.getPrivate())));
    Files.writeString(cert, pem(certificate));
    Object keyPem =
        switch (format) {
          case PKCS8_RSA -> new JcaPKCS8Generator(pair.getPrivate(), null).generate();
          case PKCS1_RSA -> pair.getPrivate();
          case SEC1_EC -> sec1WithCurve(pair);
        };
    Files.writeString(key, pem(keyPem));
    return certificate;
  }

  /** SEC1 as openssl writes it: the curve inside the key's [0] parameters. */
  private static PemObject sec1WithCurve(KeyPair pair) throws Exception {
    PrivateKeyInfo info = PrivateKeyInfo.getInstance(pair.getPrivate().getEncoded());
    ASN1Encodable curve = info.getPrivateKeyAlgorithm().getParameters();
    ECPrivateKey parsed = ECPrivateKey.getInstance(info.parsePrivateKey());
    ECPrivateKey withCurve = new ECPrivateKey(256, parsed.getKey(), parsed.getPublicKey(), curve);
    return new PemObject("EC PRIVATE KEY", withCurve.getEncoded());
  }

  private static String pem(Object object) throws Exception {
    StringWriter out = new StringWriter();
    try (JcaPEMWriter writer = new JcaPEMWriter(out)) {
      writer.writeObject(object);
    }
    return out.toString();
  }

  /** A client context trusting exactly this certificate. */
  static SSLContext trusting(X509Certificate certificate) throws Exception {
    KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    store.load(null, null);
    store.setCertificateEntry("server", certificate);
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(store);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, tmf.getTrustManagers(), null);
    return context;
  }
}
