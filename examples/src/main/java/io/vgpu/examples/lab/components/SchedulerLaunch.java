package io.vgpu.examples.lab.components;

import io.vgpu.k8s.cli.UnavailableException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The reference deployment's {@code vgpu scheduler} as it runs on one machine: its arguments with only
 * the places changed, its environment, and where each of its listeners is reached. Each listener the
 * manifest binds gets a free loopback port; a port the manifests name elsewhere (the extender's
 * urlPrefix, the webhook Service's port) is then reached at the lab port of the listener the manifest
 * bound to it.
 */
public final class SchedulerLaunch {
  private final List<String> args;
  private final Map<String, String> env;
  private final String podName;
  private final int httpPort;
  private final int metricsPort;
  private final Map<Integer, Integer> labPorts;

  private SchedulerLaunch(List<String> args, Map<String, String> env, String podName, int httpPort, int metricsPort, Map<Integer, Integer> labPorts) {
    this.args = args;
    this.env = env;
    this.podName = podName;
    this.httpPort = httpPort;
    this.metricsPort = metricsPort;
    this.labPorts = labPorts;
  }

  /**
   * The files the scheduler reads, with this machine's paths.
   *
   * @param certFile its serving certificate ({@code --cert_file})
   * @param keyFile that certificate's key ({@code --key_file})
   * @param clientCaFile the CA that signed kube-scheduler's client certificate ({@code --client-ca-file}),
   *     which the chart's extender requires
   * @param deviceConfigFile the device configuration ({@code --device-config-file})
   * @param kubeconfig how it reaches the API server ({@code --kubeconfig})
   */
  public record SchedulerFiles(Path certFile, Path keyFile, Path clientCaFile, Path deviceConfigFile, Path kubeconfig) {
    Map<String, String> flags() {
      Map<String, String> out = new LinkedHashMap<>();
      out.put("--cert_file", certFile.toString());
      out.put("--key_file", keyFile.toString());
      out.put("--client-ca-file", clientCaFile.toString());
      out.put("--device-config-file", deviceConfigFile.toString());
      out.put("--kubeconfig", kubeconfig.toString());
      return out;
    }
  }

  /** Plans a run of the deployment's scheduler reading {@code files}. */
  public static SchedulerLaunch plan(ReferenceDeployment deployment, SchedulerFiles files) {
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
    places.putAll(files.flags());
    Map<String, String> env = new LinkedHashMap<>(deployment.scheduler().env());
    deployment.scheduler().fieldEnv().forEach((k, field) -> env.put(k, field.equals("metadata.name") ? podName : ""));
    return new SchedulerLaunch(ReferenceDeployment.withPlaces(deployment.scheduler().args(), places), env, podName, httpPort, metricsPort, Map.copyOf(labPorts));
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

  /** A loopback port free now. */
  public static int freePort() {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free port", e);
    }
  }
}
