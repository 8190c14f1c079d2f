package io.vgpu.examples.lab.apiserver;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Who sends a request, as kube-apiserver's authenticators describe a user: the name, the groups and the
 * extra attributes a token carries (a bound ServiceAccount token's node-name claim). Admission sees it
 * as {@code request.userInfo}.
 *
 * @param username the user's name, e.g. {@code system:node:worker1}
 * @param groups the user's groups
 * @param extra the token's extra attributes, by key
 */
public record UserInfo(String username, List<String> groups, Map<String, List<String>> extra) {
  /** The extra key of a bound ServiceAccount token that names the node its pod runs on. */
  public static final String NODE_NAME_CLAIM = "authentication.kubernetes.io/node-name";

  /** Every authenticated user is in this group. */
  public static final String AUTHENTICATED = "system:authenticated";

  /** The namespace owner the scenario's pods belong to: what the {@code edit} role's holder is. */
  public static final UserInfo TENANT = new UserInfo("tenant", List.of(AUTHENTICATED), Map.of());

  /** The lab's own identity for its bookkeeping (creating the cluster's objects, reading the report). */
  public static final UserInfo ADMIN = new UserInfo("vgpu-lab-admin", List.of("system:masters", AUTHENTICATED), Map.of());

  /** The default scheduler, as kube-scheduler authenticates with its own kubeconfig: a user, not a ServiceAccount. */
  public static final UserInfo DEFAULT_SCHEDULER = new UserInfo("system:kube-scheduler", List.of(AUTHENTICATED), Map.of());

  private static final String SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:";

  /** A user; the lists and map are copied. */
  public UserInfo {
    groups = List.copyOf(groups);
    Map<String, List<String>> copy = new LinkedHashMap<>();
    extra.forEach((k, v) -> copy.put(k, List.copyOf(v)));
    extra = Collections.unmodifiableMap(copy);
  }

  /** A ServiceAccount's token without claims, as a legacy or projected token without pod binding authenticates. */
  public static UserInfo serviceAccount(String namespace, String name) {
    return new UserInfo(SERVICE_ACCOUNT_PREFIX + namespace + ":" + name,
        List.of("system:serviceaccounts", "system:serviceaccounts:" + namespace, AUTHENTICATED), Map.of());
  }

  /**
   * A ServiceAccount's token bound to a pod on {@code node}, as kubelet projects it into a pod: the
   * ServiceAccount's user with the node-name claim.
   */
  public static UserInfo boundServiceAccount(String namespace, String name, String node) {
    UserInfo account = serviceAccount(namespace, name);
    return new UserInfo(account.username(), account.groups(), Map.of(NODE_NAME_CLAIM, List.of(node)));
  }

  /** A kubelet's identity: {@code system:node:<node>} in {@code system:nodes}. */
  public static UserInfo node(String node) {
    return new UserInfo("system:node:" + node, List.of("system:nodes", AUTHENTICATED), Map.of());
  }

  /**
   * The user a scenario names (its parser checked the name): {@code tenant}, or {@code
   * system:serviceaccount:NAMESPACE:NAME} (a ServiceAccount token without the node-name claim); empty
   * for any other name.
   */
  public static Optional<UserInfo> named(String name) {
    if (name.equals(TENANT.username())) {
      return Optional.of(TENANT);
    }
    if (!name.startsWith(SERVICE_ACCOUNT_PREFIX)) {
      return Optional.empty();
    }
    String[] parts = name.substring(SERVICE_ACCOUNT_PREFIX.length()).split(":", -1);
    return parts.length == 2 && !parts[0].isEmpty() && !parts[1].isEmpty() ? Optional.of(serviceAccount(parts[0], parts[1])) : Optional.empty();
  }

  /**
   * {@code request.userInfo} as kube-apiserver hands it to CEL (an {@code authentication/v1.UserInfo}
   * made unstructured): fields that are empty are absent.
   */
  Map<String, Object> toCel() {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("username", username);
    if (!groups.isEmpty()) {
      out.put("groups", groups);
    }
    if (!extra.isEmpty()) {
      out.put("extra", extra);
    }
    return out;
  }
}
