package io.vgpu.examples.lab.components;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * The lab's own certificate authority, made fresh for each run: it signs the scheduler's serving
 * certificate (what cert-manager or the chart would provide in a cluster) and the client
 * certificates of the stand-ins that call it. Keys are EC P-256: quick to make, accepted everywhere.
 */
public final class LabCertificateAuthority {
  private static final Duration VALIDITY = Duration.ofDays(1);
  private static final String SIGNATURE = "SHA256withECDSA";

  private final KeyPair key;
  private final X509Certificate certificate;
  private final AtomicLong serials = new AtomicLong(System.currentTimeMillis());

  /**
   * An issued certificate and where its PEM files are.
   *
   * @param certificate the certificate
   * @param key its key pair
   * @param certFile the certificate's PEM file
   * @param keyFile the key's PEM file (PKCS#8)
   */
  public record Issued(X509Certificate certificate, KeyPair key, Path certFile, Path keyFile) {}

  private LabCertificateAuthority(KeyPair key, X509Certificate certificate) {
    this.key = key;
    this.certificate = certificate;
  }

  /** A new authority. */
  public static LabCertificateAuthority create() {
    try {
      KeyPair key = newKey();
      X500Name name = new X500Name("CN=vgpu-lab-ca");
      Instant now = Instant.now();
      X509v3CertificateBuilder builder =
          new JcaX509v3CertificateBuilder(name, BigInteger.ONE, Date.from(now.minus(Duration.ofMinutes(5))), Date.from(now.plus(VALIDITY)), name, key.getPublic());
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
      builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      X509Certificate certificate = new JcaX509CertificateConverter().getCertificate(builder.build(new JcaContentSignerBuilder(SIGNATURE).build(key.getPrivate())));
      return new LabCertificateAuthority(key, certificate);
    } catch (GeneralSecurityException | IOException | OperatorCreationException e) {
      throw new IllegalStateException("cannot create the lab's certificate authority: " + e.getMessage(), e);
    }
  }

  /** The authority's own certificate. */
  public X509Certificate certificate() {
    return certificate;
  }

  /** Writes the authority's certificate as PEM (a caBundle or caFile). */
  public Path writeCertificate(Path file) {
    write(file, pem(certificate));
    return file;
  }

  /**
   * A serving certificate for loopback addresses and the given DNS names, written as PEM.
   *
   * @param commonName the subject's common name
   * @param dnsNames extra DNS subject alternative names (e.g. the Service's name)
   */
  public Issued issueServer(String commonName, List<String> dnsNames, Path certFile, Path keyFile) {
    List<GeneralName> names = new ArrayList<>();
    names.add(new GeneralName(GeneralName.iPAddress, "127.0.0.1"));
    names.add(new GeneralName(GeneralName.dNSName, "localhost"));
    dnsNames.forEach(d -> names.add(new GeneralName(GeneralName.dNSName, d)));
    return issue(commonName, KeyPurposeId.id_kp_serverAuth, new GeneralNames(names.toArray(GeneralName[]::new)), certFile, keyFile);
  }

  /** A client certificate, written as PEM. */
  public Issued issueClient(String commonName, Path certFile, Path keyFile) {
    return issue(commonName, KeyPurposeId.id_kp_clientAuth, null, certFile, keyFile);
  }

  private Issued issue(String commonName, KeyPurposeId purpose, GeneralNames names, Path certFile, Path keyFile) {
    try {
      KeyPair pair = newKey();
      Instant now = Instant.now();
      X509v3CertificateBuilder builder =
          new JcaX509v3CertificateBuilder(
              certificate, BigInteger.valueOf(serials.incrementAndGet()), Date.from(now.minus(Duration.ofMinutes(5))), Date.from(now.plus(VALIDITY)),
              new X500Name("CN=" + commonName), pair.getPublic());
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
      builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment));
      builder.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(purpose));
      if (names != null) {
        builder.addExtension(Extension.subjectAlternativeName, false, names);
      }
      X509Certificate issued = new JcaX509CertificateConverter().getCertificate(builder.build(new JcaContentSignerBuilder(SIGNATURE).build(key.getPrivate())));
      write(certFile, pem(issued));
      write(keyFile, pem(new JcaPKCS8Generator(pair.getPrivate(), null).generate()));
      return new Issued(issued, pair, certFile, keyFile);
    } catch (GeneralSecurityException | IOException | OperatorCreationException e) {
      throw new IllegalStateException("cannot issue a certificate for " + commonName + ": " + e.getMessage(), e);
    }
  }

  /** A TLS context that trusts this authority and, when given, presents a client certificate. */
  public SSLContext clientContext(Issued clientCertificate) {
    try {
      KeyStore trust = KeyStore.getInstance("PKCS12");
      trust.load(null, null);
      trust.setCertificateEntry("vgpu-lab-ca", certificate);
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
      KeyManagerFactory kmf = null;
      if (clientCertificate != null) {
        KeyStore keys = KeyStore.getInstance("PKCS12");
        keys.load(null, null);
        char[] password = "lab".toCharArray();
        keys.setKeyEntry("client", clientCertificate.key().getPrivate(), password, new Certificate[] {clientCertificate.certificate(), certificate});
        kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, password);
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), new SecureRandom());
      return context;
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalStateException("cannot build a TLS context: " + e.getMessage(), e);
    }
  }

  private static KeyPair newKey() throws GeneralSecurityException {
    KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
    generator.initialize(new ECGenParameterSpec("secp256r1"));
    return generator.generateKeyPair();
  }

  private static String pem(Object object) {
    StringWriter out = new StringWriter();
    try (JcaPEMWriter writer = new JcaPEMWriter(out)) {
      writer.writeObject(object);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toString();
  }

  private static void write(Path file, String content) {
    try {
      Files.writeString(file, content);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
  }
}
