package io.vgpu.k8s.scheduler;

import io.vgpu.k8s.server.HttpService;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Arrays;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509KeyManager;
import javax.net.ssl.X509TrustManager;
import org.jspecify.annotations.Nullable;

/**
 * A private extender listener on the loopback address, built as the scheduler's own ({@link
 * HttpService}, the same certificate), and its one client: the warm-up's filter and bind calls go
 * through Jetty, TLS and the routes' handling as kube-scheduler's will, so that the first burst does not
 * compile them. Nothing outside the process can reach it usefully: it answers on 127.0.0.1 from a port
 * chosen by the system, for as long as the warm-up runs, and acts on the warm-up's private engine only.
 *
 * <p>The client speaks HTTP/1.1 over one kept-alive connection, as kube-scheduler does, and opens a
 * new one every {@value #CALLS_PER_CONNECTION} calls so that the TLS handshake is warmed too. It trusts
 * exactly the certificate the key manager serves.
 */
final class LoopbackExtender implements AutoCloseable {
  private static final int CALLS_PER_CONNECTION = 100;
  private static final int TIMEOUT_MILLIS = (int) Duration.ofSeconds(5).toMillis();
  private static final byte[] CRLF_CRLF = {'\r', '\n', '\r', '\n'};
  private static final String CONTENT_LENGTH = "Content-Length:";

  private final HttpService server;
  private final @Nullable SSLContext tls;
  private @Nullable Socket socket;
  /** The open connection's input, buffered: an answer's head is read a byte at a time. */
  private InputStream in = InputStream.nullInputStream();
  private int calls;

  private LoopbackExtender(HttpService server, @Nullable SSLContext tls) {
    this.server = server;
    this.tls = tls;
  }

  /**
   * Starts the listener with {@code routes} (their address is replaced by the loopback's) and HTTPS
   * when {@code keys} is given.
   */
  static LoopbackExtender start(HttpService.Builder routes, @Nullable X509KeyManager keys) throws IOException {
    if (keys != null) {
      routes.tls(keys);
    }
    HttpService server = routes.start();
    try {
      return new LoopbackExtender(server, keys == null ? null : pinnedTo(keys));
    } catch (GeneralSecurityException e) {
      server.close();
      throw new IOException("the warm-up's loopback client cannot be set up: " + e.getMessage(), e);
    }
  }

  /** The address the listener's routes must be built with. */
  static InetSocketAddress address() {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
  }

  /**
   * POSTs {@code body} to {@code path} and returns the answer's body.
   *
   * @throws IOException when the call fails or is answered with other than 200
   */
  byte[] post(String path, byte[] body) throws IOException {
    Socket s = connection();
    byte[] head = ("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
        .getBytes(StandardCharsets.US_ASCII);
    byte[] request = Arrays.copyOf(head, head.length + body.length);
    System.arraycopy(body, 0, request, head.length, body.length);
    // One write: one TLS record, as a client with a buffer would send it.
    OutputStream out = s.getOutputStream();
    out.write(request);
    out.flush();
    return answer(in, path);
  }

  private Socket connection() throws IOException {
    Socket s = socket;
    if (s != null && calls++ < CALLS_PER_CONNECTION) {
      return s;
    }
    closeConnection();
    Socket fresh = tls == null ? new Socket() : tls.getSocketFactory().createSocket();
    fresh.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.port()), TIMEOUT_MILLIS);
    fresh.setSoTimeout(TIMEOUT_MILLIS);
    fresh.setTcpNoDelay(true);
    if (fresh instanceof SSLSocket ssl) {
      ssl.startHandshake();
    }
    socket = fresh;
    in = new BufferedInputStream(fresh.getInputStream());
    calls = 1;
    return fresh;
  }

  /** Reads one answer: its status line and headers, then Content-Length bytes of body (the listener always sends the length). */
  private static byte[] answer(InputStream in, String path) throws IOException {
    byte[] buffer = new byte[512];
    int size = 0;
    int matched = 0;
    while (matched < CRLF_CRLF.length) {
      int b = in.read();
      if (b < 0) {
        throw new IOException("the loopback extender closed the connection before answering " + path);
      }
      if (size == buffer.length) {
        buffer = Arrays.copyOf(buffer, size * 2);
      }
      buffer[size++] = (byte) b;
      matched = b == CRLF_CRLF[matched] ? matched + 1 : b == '\r' ? 1 : 0;
    }
    String head = new String(buffer, 0, size, StandardCharsets.US_ASCII);
    int statusEnd = head.indexOf("\r\n");
    String status = head.substring(0, statusEnd);
    int length = -1;
    for (int at = statusEnd + 2, end; at < head.length(); at = end + 2) {
      end = head.indexOf("\r\n", at);
      if (head.regionMatches(true, at, CONTENT_LENGTH, 0, CONTENT_LENGTH.length())) {
        length = Integer.parseInt(head.substring(at + CONTENT_LENGTH.length(), end).trim());
      }
    }
    if (length < 0) {
      throw new IOException("the loopback extender's answer to " + path + " has no Content-Length: " + status);
    }
    byte[] body = in.readNBytes(length);
    if (body.length < length) {
      throw new IOException("the loopback extender's answer to " + path + " ended after " + body.length + " of " + length + " bytes");
    }
    if (!status.startsWith("HTTP/1.1 200 ")) {
      throw new IOException("the loopback extender answered " + path + " with " + status + ": " + new String(body, StandardCharsets.UTF_8));
    }
    return body;
  }

  /** A client context that trusts only the certificate {@code keys} serves. */
  static SSLContext pinnedTo(X509KeyManager keys) throws GeneralSecurityException {
    X509TrustManager pinned = new X509TrustManager() {
      @Override
      public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        throw new CertificateException("the loopback client trusts no clients");
      }

      @Override
      public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        if (chain.length == 0) {
          throw new CertificateException("the loopback extender sent no certificate");
        }
        for (String alias : keys.getServerAliases(chain[0].getPublicKey().getAlgorithm(), null)) {
          X509Certificate[] served = keys.getCertificateChain(alias);
          if (served != null && served.length > 0 && Arrays.equals(served[0].getEncoded(), chain[0].getEncoded())) {
            return;
          }
        }
        throw new CertificateException("the loopback extender's certificate is not the one the scheduler serves");
      }

      @Override
      public X509Certificate[] getAcceptedIssuers() {
        return new X509Certificate[0];
      }
    };
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, new TrustManager[] {pinned}, null);
    return context;
  }

  private void closeConnection() {
    Socket s = socket;
    socket = null;
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        // Closing a loopback connection the warm-up is done with: nothing to do about it.
      }
    }
  }

  @Override
  public void close() {
    closeConnection();
    server.close();
  }
}
