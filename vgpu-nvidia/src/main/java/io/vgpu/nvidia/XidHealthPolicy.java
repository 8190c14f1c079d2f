package io.vgpu.nvidia;

import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Which Xid errors make a GPU unhealthy: HAMi's (and NVIDIA's device plugin's) rules. Every Xid does,
 * except the application errors 13, 31, 43, 45, 68 and 109, those listed in {@code
 * DP_DISABLE_HEALTHCHECKS} (a comma list; {@code all} or {@code xids} switch the Xid health check off),
 * and not those listed in {@code DP_ENABLE_HEALTHCHECKS}, which wins over both ({@code all} there turns
 * every Xid, the default-ignored ones included, into a failure). HAMi's quirks are kept: with {@code
 * DP_DISABLE_HEALTHCHECKS=all} the check is off even if {@code DP_ENABLE_HEALTHCHECKS} names Xids, and
 * Xid {@code 0} stands for "all". Unlike HAMi, an entry that is not a number is an error, not silently
 * skipped.
 */
public final class XidHealthPolicy {
  /** The environment variable listing Xids to ignore ({@code all} / {@code xids}: no Xid check). */
  public static final String DISABLE_VARIABLE = "DP_DISABLE_HEALTHCHECKS";
  /** The environment variable listing Xids to treat as failures even if ignored otherwise. */
  public static final String ENABLE_VARIABLE = "DP_ENABLE_HEALTHCHECKS";
  /** Application errors after which the GPU is still healthy (HAMi's hard-coded list). */
  public static final Set<Long> DEFAULT_IGNORED = Set.of(13L, 31L, 43L, 45L, 68L, 109L);

  /** HAMi's key for "every Xid". */
  private static final long ALL = 0;

  /** Xid to "disabled" (ignored); key {@link #ALL} is the catch-all, exactly HAMi's map. */
  private final Map<Long, Boolean> disabled;

  private XidHealthPolicy(Map<Long, Boolean> disabled) {
    this.disabled = Map.copyOf(disabled);
  }

  /** HAMi's default: every Xid but {@link #DEFAULT_IGNORED}. */
  public static XidHealthPolicy defaults() {
    return of("", "");
  }

  /**
   * The policy {@code DP_DISABLE_HEALTHCHECKS} and {@code DP_ENABLE_HEALTHCHECKS} of {@code environment}
   * describe (absent variables are empty).
   *
   * @throws IllegalArgumentException naming the variable and the entry that is not an Xid
   */
  public static XidHealthPolicy fromEnvironment(Map<String, String> environment) {
    return of(environment.getOrDefault(DISABLE_VARIABLE, ""), environment.getOrDefault(ENABLE_VARIABLE, ""));
  }

  /**
   * The policy of the two lists, as the variables would give them.
   *
   * @throws IllegalArgumentException naming the variable and the entry that is not an Xid
   */
  public static XidHealthPolicy of(String disable, String enable) {
    Map<Long, Boolean> result = parse(DISABLE_VARIABLE, disable);
    for (long ignored : DEFAULT_IGNORED) {
      result.put(ignored, true);
    }
    for (long xid : parse(ENABLE_VARIABLE, enable).keySet()) {
      result.put(xid, false);
    }
    return new XidHealthPolicy(result);
  }

  private static Map<Long, Boolean> parse(String variable, String value) {
    Map<Long, Boolean> out = new HashMap<>();
    for (String item : List.of(value.toLowerCase(Locale.ROOT).split(",", -1))) {
      String entry = item.strip();
      if (entry.equals("all") || entry.equals("xids")) {
        Map<Long, Boolean> all = new HashMap<>();
        all.put(ALL, true);
        return all;
      }
      if (entry.isEmpty()) {
        continue;
      }
      try {
        out.put(Long.parseUnsignedLong(entry), true);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(variable + "='" + value + "': '" + entry + "' is not an Xid (a number, all or xids)");
      }
    }
    return out;
  }

  /** Whether Xid health checking is off altogether (no event set is needed). */
  public boolean checksDisabled() {
    Boolean all = disabled.get(ALL);
    return all != null && all;
  }

  /** Whether an Xid critical error with this code makes its GPU unhealthy. */
  public boolean marksUnhealthy(long xid) {
    Boolean all = disabled.get(ALL);
    if (all != null && !all) {
      return true; // DP_ENABLE_HEALTHCHECKS=all
    }
    Boolean explicit = disabled.get(xid);
    if (explicit != null) {
      return !explicit;
    }
    return !checksDisabled();
  }
}
