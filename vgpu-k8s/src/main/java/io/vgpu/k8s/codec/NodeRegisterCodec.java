package io.vgpu.k8s.codec;

import io.vgpu.api.SchedulableDevice;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The {@code hami.io/node-nvidia-register} node annotation: a JSON array with one object per device, as
 * HAMi's device plugin writes it. Fields come in HAMi's order ({@code id, index, count, devmem, devcore,
 * type, numa, mode, health}) and follow Go's {@code omitempty}: a zero {@code index} or {@code numa},
 * an empty string and {@code health: false} are left out, and a missing field decodes as zero, empty or
 * {@code false} (so a device without {@code health} is unhealthy).
 *
 * <p>Example: {@code [{"id":"GPU-a","count":10,"devmem":40960,"devcore":100,"type":"NVIDIA
 * A100-SXM4-40GB","mode":"hami-core","health":true}]}.
 */
public final class NodeRegisterCodec {
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private NodeRegisterCodec() {}

  /** Encodes devices in the order given. */
  public static String encode(List<SchedulableDevice> devices) {
    StringBuilder out = new StringBuilder("[");
    for (int i = 0; i < devices.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      appendDevice(out, devices.get(i));
    }
    return out.append(']').toString();
  }

  private static void appendDevice(StringBuilder out, SchedulableDevice d) {
    Fields f = new Fields(out);
    f.string("id", d.uuid());
    f.number("index", d.index());
    f.number("count", d.splitCount());
    f.number("devmem", d.memoryMiB());
    f.number("devcore", d.cores());
    f.string("type", d.type());
    f.number("numa", d.numa());
    f.string("mode", d.mode());
    if (d.healthy()) {
      f.name("health");
      out.append("true");
    }
    out.append('}');
  }

  /** Writes the fields of one object, leaving out empty values. */
  private static final class Fields {
    private final StringBuilder out;
    private boolean first = true;

    Fields(StringBuilder out) {
      this.out = out;
      out.append('{');
    }

    void name(String name) {
      if (!first) {
        out.append(',');
      }
      first = false;
      GoJsonStrings.append(out, name);
      out.append(':');
    }

    void string(String name, String value) {
      if (!value.isEmpty()) {
        name(name);
        GoJsonStrings.append(out, value);
      }
    }

    void number(String name, long value) {
      if (value != 0) {
        name(name);
        out.append(value);
      }
    }
  }

  /**
   * Decodes an annotation. Fields HAMi does not schedule with ({@code migProfiles}, {@code
   * devicevendor}, {@code custominfo}, ...) are ignored.
   *
   * @throws IllegalArgumentException naming the device and field when the value is not such an array
   */
  public static List<SchedulableDevice> decode(String value) {
    JsonNode root;
    try {
      root = JSON.readTree(value);
    } catch (JacksonException e) {
      throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage());
    }
    if (root == null || !root.isArray()) {
      throw new IllegalArgumentException("expected a JSON array of devices, got " + abbreviate(value));
    }
    List<SchedulableDevice> devices = new ArrayList<>(root.size());
    for (int i = 0; i < root.size(); i++) {
      JsonNode d = root.get(i);
      if (!d.isObject()) {
        throw new IllegalArgumentException("device " + i + " is not a JSON object");
      }
      devices.add(
          new SchedulableDevice(
              string(d, "id", i),
              number(d, "index", i),
              string(d, "type", i),
              number(d, "devmem", i),
              number(d, "devcore", i),
              number(d, "count", i),
              number(d, "numa", i),
              bool(d, "health", i),
              string(d, "mode", i)));
    }
    return devices;
  }

  private static String string(JsonNode device, String field, int i) {
    JsonNode v = device.get(field);
    if (v == null || v.isNull()) {
      return "";
    }
    if (!v.isString()) {
      throw fieldError(i, field, v);
    }
    return v.stringValue();
  }

  private static int number(JsonNode device, String field, int i) {
    JsonNode v = device.get(field);
    if (v == null || v.isNull()) {
      return 0;
    }
    if (!v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() < 0) {
      throw fieldError(i, field, v);
    }
    return v.intValue();
  }

  private static boolean bool(JsonNode device, String field, int i) {
    JsonNode v = device.get(field);
    if (v == null || v.isNull()) {
      return false;
    }
    if (!v.isBoolean()) {
      throw fieldError(i, field, v);
    }
    return v.booleanValue();
  }

  private static IllegalArgumentException fieldError(int i, String field, JsonNode value) {
    return new IllegalArgumentException("device " + i + ": field '" + field + "' has invalid value " + value);
  }

  private static String abbreviate(String value) {
    return value.length() <= 40 ? value : value.substring(0, 40) + "...";
  }
}
