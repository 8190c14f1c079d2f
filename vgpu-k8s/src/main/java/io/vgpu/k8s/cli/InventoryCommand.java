package io.vgpu.k8s.cli;

import io.vgpu.api.Device;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.spi.DeviceSource;
import io.vgpu.api.spi.DeviceSourceException;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.core.Engine;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.config.DeviceConfigReader;
import io.vgpu.k8s.simulate.SimulationJson;
import io.vgpu.k8s.simulate.TextTable;
import io.vgpu.k8s.yaml.InputException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code vgpu inventory}: this node's GPUs as a device source reads them, and the {@code
 * hami.io/node-nvidia-register} value HAMi's device plugin would write for them under the device
 * configuration's sharing settings.
 */
@Command(
    name = "inventory",
    mixinStandardHelpOptions = true,
    description = "Lists this node's GPUs and the hami.io/node-nvidia-register value a device plugin would write for them.")
final class InventoryCommand implements Callable<Integer> {

  /** Output formats. */
  enum Format {
    TABLE,
    JSON
  }

  @CommandLine.Mixin DeviceSourceOptions sources = new DeviceSourceOptions();

  @Option(names = "--output", paramLabel = "FORMAT", description = "table (default) or json.")
  Format output = Format.TABLE;

  @Option(names = "--device-config-file", paramLabel = "FILE", description = "HAMi's device-config YAML: its sharing settings shape the register value.")
  @Nullable Path deviceConfigFile;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    DeviceConfig config = DeviceConfig.DEFAULT;
    if (deviceConfigFile != null) {
      config = new DeviceConfigReader(new HashSet<>(Engine.create().placementPolicies())).readFile(deviceConfigFile);
    }
    List<Device> devices;
    try (DeviceSource source = sources.open(config)) {
      devices = source.devices();
    } catch (DeviceSourceException e) {
      throw new InputException("--source " + sources.source + ": " + e.getMessage());
    }
    List<SchedulableDevice> registered;
    try {
      registered = new DeviceRegistrar(config.schema().vendor()).register(devices, config.sharing());
    } catch (IllegalArgumentException e) {
      throw new InputException("device config: " + e.getMessage());
    }
    String register = NodeRegisterCodec.encode(registered);
    PrintWriter out = spec.commandLine().getOut();
    out.print(output == Format.JSON ? SimulationJson.pretty(json(devices, register)) : table(devices, register));
    out.flush();
    return 0;
  }

  private static ObjectNode json(List<Device> devices, String register) {
    JsonNodeFactory nodes = JsonNodeFactory.instance;
    ObjectNode root = nodes.objectNode();
    ArrayNode list = root.putArray("devices");
    for (Device d : devices) {
      ObjectNode device = list.addObject();
      device.put("uuid", d.uuid());
      device.put("index", d.index());
      device.put("model", d.model());
      device.put("memoryMiB", d.memoryMiB());
      device.put("numa", d.numa());
      device.put("health", d.healthy());
      device.put("pciBusId", d.pciBusId());
    }
    root.put("register", register);
    return root;
  }

  private static String table(List<Device> devices, String register) {
    TextTable table = new TextTable("INDEX", "UUID", "MODEL", "MEMORY MiB", "NUMA", "HEALTH", "PCI BUS ID");
    for (Device d : devices) {
      table.row(
          Integer.toString(d.index()), d.uuid(), d.model(), Long.toString(d.memoryMiB()), Integer.toString(d.numa()), d.healthy() ? "ok" : "unhealthy", d.pciBusId().isEmpty() ? "-" : d.pciBusId());
    }
    String devicesText = devices.isEmpty() ? "no GPU\n" : table.render("");
    return "DEVICES\n" + devicesText + "\nREGISTER\n" + HamiAnnotations.NODE_REGISTER + ": " + register + "\n";
  }
}
