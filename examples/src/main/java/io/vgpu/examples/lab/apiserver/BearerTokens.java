package io.vgpu.examples.lab.apiserver;

import io.fabric8.mockwebserver.http.RecordedRequest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The stand-in's token authenticator: each user the lab hands a kubeconfig gets a random bearer token,
 * and a request is that user exactly when it carries that token ({@code Authorization: Bearer ...}), as
 * kube-apiserver's token authenticators map a ServiceAccount token to its user and claims.
 */
final class BearerTokens {
  private static final String BEARER = "Bearer ";

  private final SecureRandom random = new SecureRandom();
  private final Map<String, UserInfo> users = new ConcurrentHashMap<>();
  private final Map<UserInfo, String> tokens = new ConcurrentHashMap<>();

  /** The token of {@code user}, made at the first call; the same token after. */
  String tokenOf(UserInfo user) {
    return tokens.computeIfAbsent(user, u -> {
      byte[] bytes = new byte[32];
      random.nextBytes(bytes);
      String token = Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
      users.put(token, u);
      return token;
    });
  }

  /** The user whose token the request carries; empty when it carries none or one the stand-in did not issue. */
  Optional<UserInfo> authenticate(RecordedRequest request) {
    String header = request.getHeader("Authorization");
    if (header == null || !header.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
      return Optional.empty();
    }
    return Optional.ofNullable(users.get(header.substring(BEARER.length()).trim()));
  }
}
