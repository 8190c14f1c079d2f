package io.vgpu.examples.lab.kubelet;

import io.vgpu.api.Device;
import io.vgpu.k8s.simulate.NodeSpec;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.mock.GpuProfile;
import io.vgpu.mock.GpuProfiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One node's GPUs: vgpu-native's mock driver configured with the node's devices, its own machine-wide
 * state file, so that every node of the lab is a separate mock machine. Every process that uses the
 * node's GPUs — the node agent through NVML, the containers through the driver — gets the same {@link
 * #environment()}, as every process on a real node sees the same driver.
 */
public final class MockMachine {
  private static final String DRIVER_CONFIG = "VGPU_MOCK_CONFIG";
  private static final String DRIVER_STATE = "VGPU_MOCK_STATE";
  private static final String INJECT = "VGPU_MOCK_INJECT";
  /** An Xid that makes a GPU unhealthy (HAMi's critical list): how a scenario's {@code health: false} is played. */
  private static final int UNHEALTHY_XID = 48;

  private final String node;
  private final List<Device> devices;
  private final Path deviceList;
  private final Path state;

  private MockMachine(String node, List<Device> devices, Path deviceList, Path state) {
    this.node = node;
    this.devices = devices;
    this.deviceList = deviceList;
    this.state = state;
  }

  /**
   * Writes the mock machine of a scenario node into {@code directory}.
   *
   * @throws InputException when a device matches no mock profile, or the indices are not 0..n-1
   */
  public static MockMachine create(NodeSpec node, Path directory) {
    List<Device> devices = new ArrayList<>(node.devices());
    devices.sort(Comparator.comparingInt(Device::index));
    StringBuilder list = new StringBuilder("# mock GPUs of lab node " + node.name() + "\n");
    for (int i = 0; i < devices.size(); i++) {
      Device d = devices.get(i);
      if (d.index() != i) {
        throw new InputException(node.position(), "node " + node.name() + ": device indices must be 0.." + (devices.size() - 1) + " for the lab's mock driver, got " + d.index());
      }
      GpuProfile profile = profileOf(d, node);
      // PCI addresses: the mock's own per-index rule, which vgpu-mock's profiles share.
      list.append("profile=").append(profile.profile()).append(" uuid=").append(d.uuid()).append(" numa=").append(d.numa()).append('\n');
    }
    try {
      Files.createDirectories(directory);
      Path deviceList = directory.resolve("mock-devices.txt");
      Files.writeString(deviceList, list);
      Path state = directory.resolve("mock-driver.state");
      Files.deleteIfExists(state);
      Files.createFile(state);
      // Every process on the node, whatever its user, shares the driver's state.
      Files.setPosixFilePermissions(state, PosixFilePermissions.fromString("rw-rw-rw-"));
      return new MockMachine(node.name(), List.copyOf(devices), deviceList, state);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the mock machine of node " + node.name(), e);
    }
  }

  private static GpuProfile profileOf(Device d, NodeSpec node) {
    return GpuProfiles.all().stream()
        .filter(p -> p.name().equals(d.model()) && p.memoryMiB() == d.memoryMiB())
        .findFirst()
        .orElseThrow(() -> new InputException(node.position(),
            "node " + node.name() + ": device " + d.uuid() + " (" + d.model() + ", " + d.memoryMiB() + " MiB) matches no mock GPU profile, so the lab cannot run it"
                + " (profiles: " + String.join(", ", GpuProfiles.all().stream().map(p -> p.name() + " " + p.memoryMiB() + " MiB").toList()) + ")"));
  }

  /** The node. */
  public String node() {
    return node;
  }

  /** The GPUs in index order. */
  public List<Device> devices() {
    return devices;
  }

  /** Whether the node has GPUs at all. */
  public boolean hasGpus() {
    return !devices.isEmpty();
  }

  /** The driver's state file. */
  public Path state() {
    return state;
  }

  /** What every process of this node needs to reach its mock driver. */
  public Map<String, String> environment() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put(DRIVER_CONFIG, deviceList.toString());
    env.put(DRIVER_STATE, state.toString());
    return env;
  }

  /**
   * The node agent's environment: the driver, plus an Xid on each GPU the scenario marks unhealthy, so
   * the agent's health watcher sees what it would see on such a node.
   */
  public Map<String, String> agentEnvironment() {
    Map<String, String> env = environment();
    List<String> inject = new ArrayList<>();
    for (Device d : devices) {
      if (!d.healthy()) {
        inject.add("xid:" + d.index() + ":" + UNHEALTHY_XID);
      }
    }
    if (!inject.isEmpty()) {
      env.put(INJECT, String.join(",", inject));
    }
    return env;
  }
}
