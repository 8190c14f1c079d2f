package io.vgpu.k8s.cli;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.vgpu.api.spi.DeviceSource;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.config.DeviceConfigReader;
import io.vgpu.k8s.deviceplugin.NodeAgent;
import io.vgpu.k8s.grant.GrantKeySecret;
import io.vgpu.k8s.grant.GrantVerifier;
import io.vgpu.k8s.grant.PodGrants;
import io.vgpu.k8s.yaml.InputException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code vgpu device-plugin}: the node agent — kubelet device plugin, node registration, the
 * interposer on the host, and the node monitor's metrics.
 */
@Command(
    name = "device-plugin",
    mixinStandardHelpOptions = true,
    description = "Run the node agent: kubelet device plugin, node registration and node monitor.")
public final class DevicePluginCommand implements Callable<Integer> {
  @Option(names = "--device-config-file", description = "HAMi's device-config YAML (its nvidia section).")
  @Nullable Path deviceConfigFile;

  @CommandLine.Mixin DeviceSourceOptions sources = new DeviceSourceOptions();

  @Option(names = "--kubeconfig", description = "Kubeconfig file; without it, the in-cluster configuration.")
  @Nullable Path kubeconfig;

  @Option(names = "--device-plugin-dir", defaultValue = "/var/lib/kubelet/device-plugins", description = "kubelet's device-plugin directory (default ${DEFAULT-VALUE}).")
  Path pluginDirectory;

  @Option(names = "--node-name", description = "This node's name (default: the NODE_NAME environment variable).")
  @Nullable String nodeName;

  @Option(names = "--hook-path", description = "Where the interposer is installed, <hook>/vgpu (default: HOOK_PATH, else /usr/local).")
  @Nullable Path hookPath;

  @Option(names = "--metrics-bind-address", defaultValue = ":9394", description = "The node monitor's address; empty for none (default ${DEFAULT-VALUE}).")
  String metricsBind;

  @Option(
      names = "--grant-key-secret",
      paramLabel = "NAMESPACE/NAME",
      description = "The Secret holding the scheduler's grant key: Allocate serves, and the watchdog honours, only grants the scheduler signed. Without it grants are taken as written.")
  @Nullable String grantKeySecret;

  @Option(
      names = "--stack",
      defaultValue = "hami",
      paramLabel = "hami|kai",
      description = "Which scheduler the agent serves: hami (vgpu's own; sharing slots per card, grants through Allocate) or kai (KAI Scheduler: whole cards as nvidia.com/gpu, KAI fraction containers' grants written from KAI's decisions) (default ${DEFAULT-VALUE}).")
  String stack;

  @Option(
      names = "--pod-resources-socket",
      defaultValue = "/var/lib/kubelet/pod-resources/kubelet.sock",
      description = "kubelet's PodResources API socket, read under --stack kai to learn which whole cards each container holds (default ${DEFAULT-VALUE}).")
  Path podResourcesSocket;

  /** {@code --stack} parsed; one line naming the value otherwise. */
  static NodeAgent.Stack stack(String value) {
    for (NodeAgent.Stack s : NodeAgent.Stack.values()) {
      if (s.key().equals(value)) {
        return s;
      }
    }
    throw new InputException("--stack '" + value + "' is not one of hami, kai");
  }

  @Override
  public Integer call() throws Exception {
    NodeAgent.Stack chosen = stack(stack);
    String node = nodeName != null ? nodeName : System.getenv("NODE_NAME");
    if (node == null || node.isEmpty()) {
      throw new InputException("--node-name is not given and NODE_NAME is not set");
    }
    DeviceConfig config = deviceConfigFile == null ? DeviceConfig.DEFAULT : new DeviceConfigReader(Set.of()).readFile(deviceConfigFile);
    Path hook = hookPath != null ? hookPath : Path.of(System.getenv().getOrDefault("HOOK_PATH", "/usr/local"));
    DeviceSource devices = sources.open(config);
    KubernetesClient client;
    try {
      client = ClusterConnection.connect(kubeconfig);
    } catch (RuntimeException e) {
      devices.close();
      throw e;
    }
    PodGrants grants;
    try {
      grants = grantKeySecret == null ? PodGrants.unverified() : PodGrants.verified(GrantVerifier.of(GrantKeySecret.parse(client, "--grant-key-secret", grantKeySecret)));
    } catch (IllegalArgumentException e) {
      client.close();
      devices.close();
      throw new InputException(e.getMessage());
    }
    CountDownLatch stopped = new CountDownLatch(1);
    NodeAgent.Options options = new NodeAgent.Options(node, hook, pluginDirectory, "nvidia-gpu.sock", metricsBind, true, chosen, podResourcesSocket);
    try (NodeAgent agent = NodeAgent.start(options, config, devices, client, grants, Clock.systemUTC())) {
      Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown, "vgpu-node-agent-shutdown"));
      stopped.await();
    } finally {
      client.close();
    }
    return 0;
  }
}
