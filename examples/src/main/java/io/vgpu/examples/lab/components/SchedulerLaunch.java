package io.vgpu.examples.lab.components;

import io.vgpu.examples.lab.LabWorkspace;
import io.vgpu.examples.lab.kubescheduler.KubeSchedulerConfig;
import io.vgpu.k8s.cli.UnavailableException;
import io.vgpu.k8s.cli.Vgpu;
import io.vgpu.k8s.server.PemCredentials;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import javax.net.ssl.SSLContext;

/**
 * The reference deployment's scheduler pod as it runs on one machine: the {@code vgpu scheduler}
 * container's arguments with only the places changed, its environment, the pod's volumes as directories
 * of the run, its init container ({@code vgpu certificates}), kube-scheduler's TLS from the files that
 * container writes, and where each listener is reached. Each listener the manifest binds gets a free
 * loopback port; a port the manifests name elsewhere (the extender's urlPrefix, the webhook Service's
 * port) is then reached at the lab port of the listener the manifest bound to it.
 */
public final class SchedulerLaunch {
  private final List<String> args;
  private final Map<String, String> env;
  private final String podName;
  private final int httpPort;
  private final int metricsPort;
  private final Map<Integer, Integer> labPorts;
  private final ReferenceDeployment deployment;
  private final Map<String, Path> podVolumes;

  private SchedulerLaunch(
      List<String> args, Map<String, String> env, String podName, int httpPort, int metricsPort, Map<Integer, Integer> labPorts, ReferenceDeployment deployment,
      Map<String, Path> podVolumes) {
    this.deployment = deployment;
    this.podVolumes = podVolumes;
    this.args = args;
    this.env = env;
    this.podName = podName;
    this.httpPort = httpPort;
    this.metricsPort = metricsPort;
    this.labPorts = labPorts;
  }

  /**
   * Plans a run of the deployment's scheduler pod in {@code workspace}, reading {@code deviceConfigFile}
   * and reaching the API server through {@code kubeconfig}.
   */
  public static SchedulerLaunch plan(ReferenceDeployment deployment, LabWorkspace workspace, Path deviceConfigFile, Path kubeconfig) {
    // The pod's volumes that hold what its containers share (certificates): directories of the run.
    Map<String, Path> podVolumes = new LinkedHashMap<>();
    for (String volume : List.of("tls", "client-tls", "tmp")) {
      podVolumes.put(volume, workspace.directory("pods/scheduler/volumes/" + volume));
    }
    int httpPort = freePort();
    int metricsPort = freePort();
    String podName = "vgpu-scheduler-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 5);
    Map<String, String> places = new LinkedHashMap<>();
    places.put("--http_bind", "127.0.0.1:" + httpPort);
    places.put("--metrics-bind-address", "127.0.0.1:" + metricsPort);
    Map<Integer, Integer> labPorts = new LinkedHashMap<>();
    for (String flag : List.of("--http_bind", "--extender-bind-address")) {
      Optional<Integer> declared = flagPort(deployment.scheduler().args(), flag);
      if (declared.isPresent()) {
        int port = flag.equals("--http_bind") ? httpPort : freePort();
        places.put(flag, "127.0.0.1:" + port);
        labPorts.put(declared.get(), port);
      }
    }
    // under KAI Scheduler the scheduler serves only the webhook and reads no device config (it refuses the flag)
    if (deployment.hasKubeScheduler() || deployment.scheduler().args().stream().anyMatch(a -> a.equals("--device-config-file") || a.startsWith("--device-config-file="))) {
      places.put("--device-config-file", deviceConfigFile.toString());
    }
    places.put("--kubeconfig", kubeconfig.toString());
    Map<String, String> env = new LinkedHashMap<>(deployment.scheduler().env());
    deployment.scheduler().fieldEnv().forEach((k, field) -> env.put(k, field.equals("metadata.name") ? podName : ""));
    List<String> args = ReferenceDeployment.withPlaces(deployment.scheduler().argsWithVolumes(podVolumes), places);
    return new SchedulerLaunch(args, env, podName, httpPort, metricsPort, Map.copyOf(labPorts), deployment, Map.copyOf(podVolumes));
  }

  /**
   * The scheduler pod's init container: makes the serving certificate (kept in a Secret, its CA patched
   * into the webhook's caBundle) and kube-scheduler's client certificate, into the pod's volumes. It runs
   * the real {@code vgpu certificates} command in this JVM (a JVM of its own would only add start-up
   * time); its output goes to {@code log}.
   *
   * @throws UnavailableException when it fails
   */
  public void runCertificates(Path kubeconfig, Path log) {
    List<String> args = ReferenceDeployment.withPlaces(deployment.certificates().argsWithVolumes(podVolumes), Map.of("--kubeconfig", kubeconfig.toString()));
    StringWriter output = new StringWriter();
    int code;
    try (PrintWriter out = new PrintWriter(output)) {
      code = Vgpu.run(args.toArray(String[]::new), out, out);
    }
    try {
      Files.writeString(log, String.join(" ", args) + "\n" + output);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + log, e);
    }
    if (code != 0) {
      throw new UnavailableException("the scheduler pod's init container (vgpu certificates) failed with exit code " + code + ": "
          + output.toString().lines().findFirst().orElse("") + " (log: " + log + ")");
    }
  }

  /** kube-scheduler's TLS to the extender, from the files its configuration names in its container's volumes. */
  public SSLContext kubeSchedulerTls(KubeSchedulerConfig config) {
    ReferenceDeployment.Container container = deployment.kubeScheduler();
    KubeSchedulerConfig.Extender extender = config.extender();
    try {
      List<X509Certificate> trusted =
          extender.caFile().isEmpty() ? List.of() : TlsContexts.certificates(Path.of(container.inVolume(extender.caFile(), podVolumes)));
      Optional<PemCredentials> client =
          extender.certFile().isEmpty()
              ? Optional.empty()
              : Optional.of(PemCredentials.read(Path.of(container.inVolume(extender.certFile(), podVolumes)), Path.of(container.inVolume(extender.keyFile(), podVolumes))));
      return TlsContexts.client(trusted, client);
    } catch (IOException e) {
      throw new UnavailableException("kube-scheduler cannot read the certificates its configuration names: " + e.getMessage());
    }
  }

  /** The arguments, starting with the subcommand. */
  public List<String> args() {
    return args;
  }

  /** The environment, downward-API variables filled in. */
  public Map<String, String> env() {
    return env;
  }

  /** The scheduler pod's name (its {@code metadata.name}, and kube-scheduler's hostname beside it). */
  public String podName() {
    return podName;
  }

  /** The port of {@code --http_bind}. */
  public int httpPort() {
    return httpPort;
  }

  /** The port of {@code --metrics-bind-address}: metrics and the probes. */
  public int metricsPort() {
    return metricsPort;
  }

  /**
   * The lab port that serves a port the manifests name.
   *
   * @param what what names it, for the error
   * @throws UnavailableException when no listener of the scheduler binds that port
   */
  public int labPort(int declared, String what) {
    Integer port = labPorts.get(declared);
    if (port == null) {
      throw new UnavailableException(what + " names port " + declared + ", which no listener of the reference deployment's scheduler binds");
    }
    return port;
  }

  /** The port a {@code --flag=host:port} argument binds, if the manifest passes the flag. */
  private static Optional<Integer> flagPort(List<String> args, String flag) {
    for (String arg : args) {
      if (arg.startsWith(flag + "=")) {
        String value = arg.substring(flag.length() + 1);
        int colon = value.lastIndexOf(':');
        try {
          return Optional.of(Integer.parseInt(value.substring(colon + 1)));
        } catch (NumberFormatException e) {
          return Optional.empty();
        }
      }
    }
    return Optional.empty();
  }

  /** Where the ports a component listens on are drawn from: below the kernel's ephemeral range. */
  private static final int LISTEN_PORTS_FROM = 20000;

  /**
   * A loopback port free now, for a component to listen on. It is drawn below the kernel's ephemeral
   * range ({@code ip_local_port_range}): a port the kernel handed out ({@code bind(0)}) can be given
   * again, between the check and the component's own bind, to one of the lab's many outgoing
   * connections, and the component then fails to start with "address already in use".
   */
  public static int freePort() {
    int below = ephemeralRangeStart();
    if (below - LISTEN_PORTS_FROM >= 1000) {
      ThreadLocalRandom random = ThreadLocalRandom.current();
      for (int attempt = 0; attempt < 200; attempt++) {
        int port = random.nextInt(LISTEN_PORTS_FROM, below);
        try (ServerSocket socket = new ServerSocket()) {
          socket.setReuseAddress(false);
          socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
          return port;
        } catch (IOException e) {
          // taken: draw another
        }
      }
    }
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free port", e);
    }
  }

  /** The first port of the kernel's ephemeral range (Linux), or 0 when it cannot be read. */
  private static int ephemeralRangeStart() {
    try {
      return Integer.parseInt(Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim().split("\\s+")[0]);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }
}
