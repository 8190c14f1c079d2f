package io.vgpu.core;

import io.vgpu.api.DeviceConstraints;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * What a request asks of the cards it may take, whatever their usage: type and UUID lists, sharing
 * mode, NUMA binding, and HAMi's {@code mutex} device policy (only unshared cards). Prepared once so
 * the fit rule answers with a lookup; safe for concurrent use.
 */
final class CardConstraints {
  /** No constraint: what a bare grant, which names no request, is checked against. */
  static final CardConstraints NONE = new CardConstraints(DeviceConstraints.NONE, false);

  final boolean mutex;
  final boolean numaBind;
  /** Whether a UUID list is set; when not, every card passes {@link #uuidAllowed}. */
  final boolean listsUuids;
  /** Whether a type list or a sharing mode is set; when not, every card passes {@link #typeAllowed}. */
  final boolean listsTypes;
  private final @Nullable Set<String> useUuids;
  private final @Nullable Set<String> avoidUuids;
  private final String[] useTypes;
  private final String[] avoidTypes;
  private final String sharingMode;

  /** Per interned device type: 0 not yet known, 1 allowed, 2 refused. Races only recompute. */
  private volatile byte[] typeVerdicts = new byte[32];

  CardConstraints(DeviceConstraints c, boolean mutex) {
    this.mutex = mutex;
    this.numaBind = c.numaBind();
    this.useUuids = trimmedSet(c.useUuids());
    this.avoidUuids = trimmedSet(c.avoidUuids());
    this.listsUuids = useUuids != null || avoidUuids != null;
    this.useTypes = upperCased(c.useTypes());
    this.avoidTypes = upperCased(c.avoidTypes());
    this.sharingMode = c.sharingMode();
    this.listsTypes = useTypes.length > 0 || avoidTypes.length > 0 || !sharingMode.isEmpty();
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

  /** HAMi's UUID check: the use list (when set) must name the card, the avoid list must not. */
  boolean uuidAllowed(String uuid) {
    if (useUuids != null && !useUuids.contains(uuid)) {
      return false;
    }
    return avoidUuids == null || !avoidUuids.contains(uuid);
  }

  /** HAMi's type check for an interned (type, mode) pair; see {@link DeviceTypes}. */
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
      grown = Arrays.copyOf(verdicts, Math.max(typeId + 1, verdicts.length * 2));
    }
    grown[typeId] = (byte) (allowed ? 1 : 2);
    typeVerdicts = grown;
    return allowed;
  }

  /** Use/avoid type lists as case-insensitive substrings, and the sharing mode as HAMi checks them. */
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
