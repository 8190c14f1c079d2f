package io.vgpu.k8s.server;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A certificate chain and its private key read from PEM files, as Kubernetes tooling writes them
 * (cert-manager, kube-webhook-certgen): the key may be PKCS#8 ({@code PRIVATE KEY}), PKCS#1 RSA
 * ({@code RSA PRIVATE KEY}) or SEC1 EC ({@code EC PRIVATE KEY}).
 *
 * @param chain the certificate chain, leaf first
 * @param key the private key
 */
public record PemCredentials(List<X509Certificate> chain, PrivateKey key) {
  private static final Pattern BLOCK =
      Pattern.compile("-----BEGIN ([A-Z ]+)-----([^-]+)-----END \\1-----");
  // DER of the AlgorithmIdentifier for rsaEncryption (1.2.840.113549.1.1.1) with NULL parameters.
  private static final byte[] RSA_ALGORITHM = {
    0x30, 0x0d, 0x06, 0x09, 0x2a, (byte) 0x86, 0x48, (byte) 0x86, (byte) 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00
  };
  // DER of the OID id-ecPublicKey (1.2.840.10045.2.1).
  private static final byte[] EC_PUBLIC_KEY_OID = {0x06, 0x07, 0x2a, (byte) 0x86, 0x48, (byte) 0xce, 0x3d, 0x02, 0x01};

  /** Copies the chain. */
  public PemCredentials {
    chain = List.copyOf(chain);
    if (chain.isEmpty()) {
      throw new IllegalArgumentException("certificate chain is empty");
    }
  }

  /**
   * Reads a certificate file and a key file.
   *
   * @throws IOException when a file cannot be read or holds no usable PEM block; the message names the
   *     file
   */
  public static PemCredentials read(Path certFile, Path keyFile) throws IOException {
    return new PemCredentials(certificates(Files.readAllBytes(certFile), certFile.toString()), readKey(Files.readString(keyFile, StandardCharsets.US_ASCII), keyFile.toString()));
  }

  /**
   * Reads a certificate chain and a key from PEM text (e.g. a Secret's {@code tls.crt} and {@code tls.key}).
   *
   * @param certSource where the certificate text came from, for messages
   * @param keySource where the key text came from, for messages
   * @throws IOException when the text holds no usable PEM block; the message names its source
   */
  public static PemCredentials parse(String certPem, String certSource, String keyPem, String keySource) throws IOException {
    return new PemCredentials(certificates(certPem, certSource), readKey(keyPem, keySource));
  }

  /**
   * Reads every certificate of a PEM bundle.
   *
   * @param source where the text came from, for messages
   * @throws IOException when the text holds no certificate
   */
  public static List<X509Certificate> certificates(String pem, String source) throws IOException {
    return certificates(pem.getBytes(StandardCharsets.US_ASCII), source);
  }

  private static List<X509Certificate> certificates(byte[] encoded, String source) throws IOException {
    List<X509Certificate> chain;
    try {
      CertificateFactory factory = CertificateFactory.getInstance("X.509");
      chain =
          factory.generateCertificates(new ByteArrayInputStream(encoded)).stream()
              .map(c -> (X509Certificate) c)
              .toList();
    } catch (GeneralSecurityException e) {
      throw new IOException(source + ": not a PEM certificate (" + e.getMessage() + ")", e);
    }
    if (chain.isEmpty()) {
      throw new IOException(source + ": no certificate found");
    }
    return chain;
  }

  private static PrivateKey readKey(String text, String keyFile) throws IOException {
    Matcher m = BLOCK.matcher(text);
    byte[] ecParameters = null;
    while (m.find()) {
      String kind = m.group(1);
      byte[] der = Base64.getMimeDecoder().decode(m.group(2));
      try {
        switch (kind) {
          case "PRIVATE KEY":
            return pkcs8(der);
          case "RSA PRIVATE KEY":
            return KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(wrapPkcs8(RSA_ALGORITHM, der)));
          case "EC PARAMETERS":
            ecParameters = der;
            break;
          case "EC PRIVATE KEY":
            byte[] curve = ecCurveOid(der);
            if (curve == null) {
              curve = ecParameters;
            }
            if (curve == null) {
              throw new IllegalArgumentException("EC key names no curve and no EC PARAMETERS block precedes it");
            }
            byte[] algorithm = sequence(concat(EC_PUBLIC_KEY_OID, curve));
            return KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(wrapPkcs8(algorithm, der)));
          default:
            // Other blocks that may precede the key.
        }
      } catch (GeneralSecurityException | IllegalArgumentException e) {
        throw new IOException(keyFile + ": unreadable " + kind + " (" + e.getMessage() + ")", e);
      }
    }
    throw new IOException(keyFile + ": no PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block found");
  }

  private static PrivateKey pkcs8(byte[] der) throws GeneralSecurityException {
    GeneralSecurityException last = null;
    for (String algorithm : new String[] {"RSA", "EC", "Ed25519"}) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
      } catch (GeneralSecurityException e) {
        last = e;
      }
    }
    throw last;
  }

  /** PKCS#8 PrivateKeyInfo: SEQUENCE { INTEGER 0, algorithm, OCTET STRING key }. */
  private static byte[] wrapPkcs8(byte[] algorithm, byte[] key) {
    return sequence(concat(new byte[] {0x02, 0x01, 0x00}, algorithm, tagged(0x04, key)));
  }

  /** The named-curve OID from a SEC1 ECPrivateKey's optional [0] parameters, or {@code null}. */
  private static byte @org.jspecify.annotations.Nullable [] ecCurveOid(byte[] sec1) {
    int[] pos = {0};
    expect(sec1, pos, 0x30);
    readLength(sec1, pos);
    int end = sec1.length;
    while (pos[0] < end) {
      int tag = sec1[pos[0]++] & 0xff;
      int length = readLength(sec1, pos);
      if (tag == 0xa0) {
        byte[] oid = new byte[length];
        System.arraycopy(sec1, pos[0], oid, 0, length);
        return oid;
      }
      pos[0] += length;
    }
    return null;
  }

  private static void expect(byte[] der, int[] pos, int tag) {
    if ((der[pos[0]++] & 0xff) != tag) {
      throw new IllegalArgumentException("malformed DER");
    }
  }

  private static int readLength(byte[] der, int[] pos) {
    int first = der[pos[0]++] & 0xff;
    if (first < 0x80) {
      return first;
    }
    int length = 0;
    for (int i = 0; i < (first & 0x7f); i++) {
      length = (length << 8) | (der[pos[0]++] & 0xff);
    }
    return length;
  }

  private static byte[] sequence(byte[] content) {
    return tagged(0x30, content);
  }

  private static byte[] tagged(int tag, byte[] content) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(content.length + 6);
    out.write(tag);
    int n = content.length;
    if (n < 0x80) {
      out.write(n);
    } else if (n < 0x100) {
      out.write(0x81);
      out.write(n);
    } else if (n < 0x10000) {
      out.write(0x82);
      out.write(n >> 8);
      out.write(n);
    } else {
      out.write(0x83);
      out.write(n >> 16);
      out.write(n >> 8);
      out.write(n);
    }
    out.writeBytes(content);
    return out.toByteArray();
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }
}
