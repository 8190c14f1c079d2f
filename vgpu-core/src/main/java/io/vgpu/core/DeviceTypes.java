package io.vgpu.core;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Interns (device type, sharing mode) pairs to small integers, so that a compiled request can answer
 * "may this card type be used?" with an array lookup instead of substring matching on every card.
 */
final class DeviceTypes {
  private static final ConcurrentHashMap<String, Integer> IDS = new ConcurrentHashMap<>();
  private static final List<String[]> KEYS = new ArrayList<>();

  private DeviceTypes() {}

  static int idOf(String type, String mode) {
    String key = type + '\u0000' + mode;
    Integer id = IDS.get(key);
    if (id != null) {
      return id;
    }
    synchronized (KEYS) {
      return IDS.computeIfAbsent(
          key,
          k -> {
            KEYS.add(new String[] {type, mode});
            return KEYS.size() - 1;
          });
    }
  }

  static String type(int id) {
    synchronized (KEYS) {
      return KEYS.get(id)[0];
    }
  }

  static String mode(int id) {
    synchronized (KEYS) {
      return KEYS.get(id)[1];
    }
  }
}
