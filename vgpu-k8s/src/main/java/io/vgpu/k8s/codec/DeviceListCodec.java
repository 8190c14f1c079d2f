package io.vgpu.k8s.codec;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import java.util.ArrayList;
import java.util.List;

/**
 * The device lists of {@code hami.io/vgpu-devices-allocated} and {@code hami.io/vgpu-devices-to-allocate}.
 *
 * <p>A device is {@code UUID,VENDOR,MEMORY_MiB,CORES} followed by {@code :}; a container is its devices
 * followed by {@code ;}; containers are listed init containers first, then app containers, and a
 * container without devices is an empty segment. Segment {@code i} is therefore always container
 * {@code i} (the form HAMi fixed after v2.10.0, issue #2899). Example, an init container without GPU and
 * an app container with two: {@code ;GPU-a,NVIDIA,3000,30:GPU-b,NVIDIA,3000,30:;}.
 */
public final class DeviceListCodec {
  private static final char DEVICE_END = ':';
  private static final char CONTAINER_END = ';';

  private DeviceListCodec() {}

  /** Encodes a pod's grant: every container, init containers first. */
  public static String encode(PodGrant grant) {
    return encode(grant.allContainers());
  }

  /** Encodes containers in the order given, one segment each. */
  public static String encode(List<ContainerGrant> containers) {
    StringBuilder out = new StringBuilder();
    for (ContainerGrant container : containers) {
      for (DeviceGrant d : container.devices()) {
        out.append(d.uuid())
            .append(',')
            .append(d.vendor())
            .append(',')
            .append(d.memoryMiB())
            .append(',')
            .append(d.cores())
            .append(DEVICE_END);
      }
      out.append(CONTAINER_END);
    }
    return out.toString();
  }

  /**
   * Decodes an annotation into one device list per segment, empty segments kept. Text after the last
   * {@code ;} counts as one more segment when it is not empty; a device entry without a comma is
   * skipped, as HAMi does.
   *
   * @throws IllegalArgumentException naming the entry when a device has fewer than four fields, or
   *     memory or cores that are not non-negative integers
   */
  public static List<List<DeviceGrant>> decode(String value) {
    List<List<DeviceGrant>> containers = new ArrayList<>();
    int start = 0;
    while (start < value.length()) {
      int end = value.indexOf(CONTAINER_END, start);
      if (end < 0) {
        end = value.length();
      }
      containers.add(decodeContainer(value.substring(start, end), value));
      start = end + 1;
    }
    return containers;
  }

  private static List<DeviceGrant> decodeContainer(String segment, String whole) {
    List<DeviceGrant> devices = new ArrayList<>();
    for (String entry : segment.split(String.valueOf(DEVICE_END), -1)) {
      if (entry.indexOf(',') < 0) {
        continue;
      }
      String[] fields = entry.split(",", -1);
      if (fields.length < 4) {
        throw new IllegalArgumentException(
            "device entry '" + entry + "' in '" + whole + "' has " + fields.length + " fields, needs UUID,VENDOR,MEMORY,CORES");
      }
      devices.add(new DeviceGrant(fields[0], fields[1], amount(fields[2], "memory", entry), amount(fields[3], "cores", entry)));
    }
    return devices;
  }

  private static int amount(String text, String what, String entry) {
    try {
      int value = Integer.parseInt(text);
      if (value >= 0) {
        return value;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(what + " '" + text + "' of device entry '" + entry + "' is not a non-negative integer");
  }

  /**
   * Decodes an annotation into a pod's grant, matching segments to containers by position.
   *
   * @param pod the pod
   * @param node the node the pod was placed on
   * @param value the annotation's value
   * @param initContainers names of the pod's init containers, in order
   * @param containers names of the pod's app containers, in order
   * @throws IllegalArgumentException when the value is malformed or has more non-empty segments than
   *     the pod has containers
   */
  public static PodGrant decodeGrant(
      PodRef pod, String node, String value, List<String> initContainers, List<String> containers) {
    List<List<DeviceGrant>> segments = decode(value);
    int total = initContainers.size() + containers.size();
    for (int i = total; i < segments.size(); i++) {
      if (!segments.get(i).isEmpty()) {
        throw new IllegalArgumentException(
            "'" + value + "' has devices for container " + i + " but pod " + pod + " has " + total + " containers");
      }
    }
    List<ContainerGrant> init = new ArrayList<>();
    List<ContainerGrant> app = new ArrayList<>();
    for (int i = 0; i < total; i++) {
      List<DeviceGrant> devices = i < segments.size() ? segments.get(i) : List.of();
      if (i < initContainers.size()) {
        init.add(new ContainerGrant(initContainers.get(i), devices));
      } else {
        app.add(new ContainerGrant(containers.get(i - initContainers.size()), devices));
      }
    }
    return new PodGrant(pod, node, init, app);
  }
}
