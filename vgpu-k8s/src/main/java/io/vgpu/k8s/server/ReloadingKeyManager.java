package io.vgpu.k8s.server;

import java.io.IOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the certificate and key from two PEM files and picks up new ones when the files change, so a
 * rotated certificate (cert-manager, a re-run certgen job) takes effect without a restart. Files are
 * checked at most once per {@code checkInterval}, on the handshake path; a pair that fails to load
 * keeps the previous one in service and is reported once.
 */
public final class ReloadingKeyManager extends X509ExtendedKeyManager {
  private static final Logger LOG = LoggerFactory.getLogger(ReloadingKeyManager.class);
  private static final String ALIAS = "vgpu";

  private final Path certFile;
  private final Path keyFile;
  private final Duration checkInterval;
  private final Clock clock;
  private volatile Loaded current;
  private volatile Instant nextCheck;

  private record Loaded(PemCredentials credentials, FileTime certTime, FileTime keyTime) {}

  /**
   * Loads the pair now.
   *
   * @throws IOException when the initial pair cannot be loaded (the message names the file)
   */
  public ReloadingKeyManager(Path certFile, Path keyFile, Duration checkInterval, Clock clock) throws IOException {
    this.certFile = certFile;
    this.keyFile = keyFile;
    this.checkInterval = checkInterval;
    this.clock = clock;
    this.current = load();
    this.nextCheck = clock.instant().plus(checkInterval);
  }

  private Loaded load() throws IOException {
    FileTime certTime = Files.getLastModifiedTime(certFile);
    FileTime keyTime = Files.getLastModifiedTime(keyFile);
    return new Loaded(PemCredentials.read(certFile, keyFile), certTime, keyTime);
  }

  /** Reloads the pair if either file changed since it was last loaded; returns whether it did. */
  public boolean reloadIfChanged() {
    Loaded loaded = current;
    try {
      if (Files.getLastModifiedTime(certFile).equals(loaded.certTime)
          && Files.getLastModifiedTime(keyFile).equals(loaded.keyTime)) {
        return false;
      }
      current = load();
      LOG.info("reloaded TLS certificate from {}", certFile);
      return true;
    } catch (IOException e) {
      LOG.warn("keeping the previous TLS certificate: {}", e.getMessage());
      return false;
    }
  }

  /** Checks the files when due; called when a handshake picks its alias, before it reads chain and key. */
  private String aliasAfterCheck() {
    Instant now = clock.instant();
    if (now.isAfter(nextCheck)) {
      nextCheck = now.plus(checkInterval);
      reloadIfChanged();
    }
    return ALIAS;
  }

  @Override
  public String[] getClientAliases(String keyType, Principal @Nullable [] issuers) {
    return new String[0];
  }

  @Override
  public @Nullable String chooseClientAlias(String[] keyType, Principal @Nullable [] issuers, @Nullable Socket socket) {
    return null;
  }

  @Override
  public String[] getServerAliases(String keyType, Principal @Nullable [] issuers) {
    return new String[] {ALIAS};
  }

  @Override
  public String chooseServerAlias(String keyType, Principal @Nullable [] issuers, @Nullable Socket socket) {
    return aliasAfterCheck();
  }

  @Override
  public String chooseEngineServerAlias(String keyType, Principal @Nullable [] issuers, @Nullable SSLEngine engine) {
    return aliasAfterCheck();
  }

  @Override
  public X509Certificate[] getCertificateChain(String alias) {
    return current.credentials.chain().toArray(new X509Certificate[0]);
  }

  @Override
  public PrivateKey getPrivateKey(String alias) {
    return current.credentials.key();
  }
}
