package io.vgpu.core;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceConstraints;
import io.vgpu.api.PodRequest;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.PlacementPolicy;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A pod request prepared once for repeated evaluation: defaults applied, the policy resolved, and the
 * device constraints turned into fast lookups. Obtain one from {@link Engine#compile}; it may be used
 * concurrently.
 */
public final class CompiledRequest {
  final PodRequest request;
  final @Nullable CardDemand[] initDemands;
  final @Nullable CardDemand[] appDemands;
  final PlacementPolicy policy;
  final boolean mutex;
  final boolean numaBind;
  private final @Nullable Set<String> useUuids;
  private final @Nullable Set<String> avoidUuids;
  private final String[] useTypes;
  private final String[] avoidTypes;
  private final String sharingMode;
  /** The single app container with devices when the request can take the scan's fast path, else -1. */
  final int fastContainer;

  /** Per interned device type: 0 not yet known, 1 allowed, 2 refused. Races only recompute. */
  private volatile byte[] typeVerdicts = new byte[32];

  CompiledRequest(PodRequest request, RequestResolver resolver, PlacementPolicy policy, boolean mutex) {
    this.request = request;
    this.initDemands = resolveAll(request.initContainers(), resolver);
    this.appDemands = resolveAll(request.containers(), resolver);
    this.policy = policy;
    this.mutex = mutex;
    DeviceConstraints c = request.constraints();
    this.numaBind = c.numaBind();
    this.useUuids = trimmedSet(c.useUuids());
    this.avoidUuids = trimmedSet(c.avoidUuids());
    this.useTypes = upperCased(c.useTypes());
    this.avoidTypes = upperCased(c.avoidTypes());
    this.sharingMode = c.sharingMode();
    this.fastContainer = fastContainer();
  }

  private static @Nullable CardDemand[] resolveAll(List<ContainerRequest> containers, RequestResolver resolver) {
    @Nullable CardDemand[] out = new CardDemand[containers.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = resolver.resolve(containers.get(i));
    }
    return out;
  }

  private int fastContainer() {
    if (numaBind || useUuids != null || avoidUuids != null) {
      return -1;
    }
    for (CardDemand d : initDemands) {
      if (d != null) {
        return -1;
      }
    }
    int found = -1;
    for (int i = 0; i < appDemands.length; i++) {
      if (appDemands[i] != null) {
        if (found >= 0) {
          return -1;
        }
        found = i;
      }
    }
    return found;
  }

  private static @Nullable Set<String> trimmedSet(List<String> values) {
    Set<String> out = new HashSet<>();
    for (String v : values) {
      if (!v.trim().isEmpty()) {
        out.add(v.trim());
      }
    }
    return out.isEmpty() ? null : Set.copyOf(out);
  }

  private static String[] upperCased(List<String> values) {
    return values.stream()
        .map(String::trim)
        .filter(v -> !v.isEmpty())
        .map(v -> v.toUpperCase(Locale.ROOT))
        .toArray(String[]::new);
  }

  /** The request this was compiled from. */
  public PodRequest request() {
    return request;
  }

  /** The policy that places this request. */
  public PlacementPolicy policy() {
    return policy;
  }

  /** Whether any container asks for a device. */
  public boolean wantsDevices() {
    for (CardDemand d : initDemands) {
      if (d != null) {
        return true;
      }
    }
    for (CardDemand d : appDemands) {
      if (d != null) {
        return true;
      }
    }
    return false;
  }

  /** The resolved per-card demand of app container {@code i}, or {@code null} if it asks for none. */
  public @Nullable CardDemand appDemand(int i) {
    return appDemands[i];
  }

  /** The resolved per-card demand of init container {@code i}, or {@code null} if it asks for none. */
  public @Nullable CardDemand initDemand(int i) {
    return initDemands[i];
  }

  boolean uuidAllowed(String uuid) {
    if (useUuids != null && !useUuids.contains(uuid)) {
      return false;
    }
    return avoidUuids == null || !avoidUuids.contains(uuid);
  }

  boolean typeAllowed(int typeId) {
    byte[] verdicts = typeVerdicts;
    if (typeId < verdicts.length) {
      byte v = verdicts[typeId];
      if (v != 0) {
        return v == 1;
      }
    }
    boolean allowed = typeMatches(DeviceTypes.type(typeId), DeviceTypes.mode(typeId));
    byte[] grown = verdicts;
    if (typeId >= grown.length) {
      grown = java.util.Arrays.copyOf(verdicts, Math.max(typeId + 1, verdicts.length * 2));
    }
    grown[typeId] = (byte) (allowed ? 1 : 2);
    typeVerdicts = grown;
    return allowed;
  }

  /** HAMi's type check: use/avoid lists as case-insensitive substrings, and the sharing-mode check. */
  private boolean typeMatches(String type, String mode) {
    String upper = type.toUpperCase(Locale.ROOT);
    if (useTypes.length > 0 && !containsAny(upper, useTypes)) {
      return false;
    }
    if (avoidTypes.length > 0 && containsAny(upper, avoidTypes)) {
      return false;
    }
    return sharingMode.isEmpty() || sharingMode.contains(mode);
  }

  private static boolean containsAny(String upperType, String[] needles) {
    for (String needle : needles) {
      if (upperType.contains(needle)) {
        return true;
      }
    }
    return false;
  }
}
