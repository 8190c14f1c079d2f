package io.vgpu.examples.lab.kubelet;

import io.fabric8.kubernetes.api.model.ConfigMapProjection;
import io.fabric8.kubernetes.api.model.ConfigMapVolumeSource;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.DownwardAPIVolumeFile;
import io.fabric8.kubernetes.api.model.HostPathVolumeSource;
import io.fabric8.kubernetes.api.model.KeyToPath;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.ProjectedVolumeSource;
import io.fabric8.kubernetes.api.model.ServiceAccountTokenProjection;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeProjection;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A pod's volumes on the lab's kubelet, and each container's mounts of them, as kubelet makes them:
 * {@code emptyDir} (a fresh directory, mode 0777), {@code hostPath} (the node's path, relocated by
 * {@link NodePaths}, with its type checked or created), {@code configMap} and {@code projected} (files
 * written once at set-up with their modes, always mounted read-only), and the ServiceAccount volume
 * the API server's admission adds to every pod that does not opt out ({@code
 * /var/run/secrets/kubernetes.io/serviceaccount}: {@code token}, {@code ca.crt}, {@code namespace}).
 * A mount's {@code subPath} or {@code subPathExpr} ({@code $(VAR)} from the container's environment)
 * names a path inside the volume; a missing one is created as kubelet's SafeMakeDir creates it: every
 * missing directory gets the mode of the volume's root directory, setuid, setgid and sticky bits
 * included (kubelet fchmods each one after mkdirat, so its umask does not apply), owned by root.
 */
public final class PodVolumes {
  /** Where the ServiceAccount volume is mounted. */
  public static final String SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";
  /** The name of the ServiceAccount volume when the pod spec has none (the API server names it kube-api-access-&lt;random&gt;). */
  static final String SERVICE_ACCOUNT_VOLUME = "kube-api-access-lab";
  private static final int DEFAULT_FILE_MODE = 0644;

  private final Path podDirectory;
  private final NodePaths paths;
  private final ContainerEnvironment.ConfigMaps configMaps;
  private final ClusterAccess access;
  private final ContainerEnvironment.PodPlace place;

  /**
   * The volumes of pods on one node.
   *
   * @param podDirectory this pod's directory on the node (kubelet's {@code /var/lib/kubelet/pods/<uid>})
   */
  public PodVolumes(Path podDirectory, NodePaths paths, ContainerEnvironment.ConfigMaps configMaps, ClusterAccess access, ContainerEnvironment.PodPlace place) {
    this.podDirectory = podDirectory;
    this.paths = paths;
    this.configMaps = configMaps;
    this.access = access;
    this.place = place;
  }

  /**
   * One set-up volume.
   *
   * @param name the volume's name
   * @param path its directory (or file) in the lab
   * @param readOnly whether every mount of it is read-only (ConfigMap and projected volumes)
   */
  public record Mounted(String name, Path path, boolean readOnly) {}

  /**
   * Sets up every volume of the pod.
   *
   * @throws VolumeSetupException naming the first volume that cannot be set up, with kubelet's reason
   */
  public Map<String, Mounted> setUp(Pod pod) throws VolumeSetupException {
    Map<String, Mounted> out = new LinkedHashMap<>();
    for (Volume v : volumes(pod)) {
      out.put(v.getName(), setUp(pod, v));
    }
    return out;
  }

  /** The pod's volumes, with the ServiceAccount volume the API server would have added. */
  static List<Volume> volumes(Pod pod) {
    List<Volume> all = new ArrayList<>(Optional.ofNullable(pod.getSpec().getVolumes()).orElse(List.of()));
    if (automounts(pod)) {
      Volume sa = new Volume();
      sa.setName(SERVICE_ACCOUNT_VOLUME);
      ProjectedVolumeSource projected = new ProjectedVolumeSource();
      VolumeProjection token = new VolumeProjection();
      token.setServiceAccountToken(new ServiceAccountTokenProjection(null, 3607L, "token", null));
      projected.setSources(List.of(token));
      sa.setProjected(projected);
      all.add(sa);
    }
    return all;
  }

  /** Whether the ServiceAccount admission gives this pod its token volume ({@code automountServiceAccountToken} not false). */
  private static boolean automounts(Pod pod) {
    return !Boolean.FALSE.equals(pod.getSpec().getAutomountServiceAccountToken());
  }

  private Mounted setUp(Pod pod, Volume v) throws VolumeSetupException {
    String name = v.getName();
    try {
      if (v.getHostPath() != null) {
        return new Mounted(name, hostPath(name, v.getHostPath()), false);
      }
      if (v.getEmptyDir() != null) {
        Path dir = fresh("kubernetes.io~empty-dir", name);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        return new Mounted(name, dir, false);
      }
      if (v.getConfigMap() != null) {
        Path dir = fresh("kubernetes.io~configmap", name);
        configMap(pod, name, v.getConfigMap(), dir);
        return new Mounted(name, dir, true);
      }
      if (v.getProjected() != null) {
        Path dir = fresh("kubernetes.io~projected", name);
        projected(pod, name, v.getProjected(), dir);
        return new Mounted(name, dir, true);
      }
    } catch (IOException e) {
      throw new VolumeSetupException(name, "cannot write the volume: " + e.getMessage());
    }
    throw new VolumeSetupException(name, "the lab's kubelet supports hostPath, emptyDir, configMap and projected volumes only");
  }

  private Path fresh(String plugin, String name) throws IOException {
    Path dir = podDirectory.resolve("volumes").resolve(plugin).resolve(name);
    if (Files.exists(dir)) {
      try (var walk = Files.walk(dir)) {
        for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
          Files.delete(p);
        }
      }
    }
    Files.createDirectories(dir);
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    return dir;
  }

  private Path hostPath(String name, HostPathVolumeSource source) throws VolumeSetupException, IOException {
    String nodePath = source.getPath();
    Path path;
    try {
      path = paths.onNode(nodePath);
    } catch (IllegalArgumentException e) {
      throw new VolumeSetupException(name, "hostPath " + e.getMessage());
    }
    String type = Optional.ofNullable(source.getType()).orElse("");
    switch (type) {
      case "" -> {
        // no check: the runtime finds out when it mounts
      }
      case "DirectoryOrCreate" -> {
        if (!Files.exists(path)) {
          Files.createDirectories(path);
          Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rwxr-xr-x"));
        } else if (!Files.isDirectory(path)) {
          throw new VolumeSetupException(name, "hostPath type check failed: " + nodePath + " is not a directory");
        }
      }
      case "Directory" -> {
        if (!Files.isDirectory(path)) {
          throw new VolumeSetupException(name, "hostPath type check failed: " + nodePath + " is not a directory");
        }
      }
      case "FileOrCreate" -> {
        if (!Files.exists(path)) {
          Files.createDirectories(path.getParent());
          Files.createFile(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-r--r--")));
        } else if (!Files.isRegularFile(path)) {
          throw new VolumeSetupException(name, "hostPath type check failed: " + nodePath + " is not a file");
        }
      }
      case "File" -> {
        if (!Files.isRegularFile(path)) {
          throw new VolumeSetupException(name, "hostPath type check failed: " + nodePath + " is not a file");
        }
      }
      default -> throw new VolumeSetupException(name, "hostPath type " + type + " is not supported by the lab's kubelet");
    }
    return path;
  }

  private void configMap(Pod pod, String volume, ConfigMapVolumeSource source, Path dir) throws VolumeSetupException, IOException {
    Optional<Map<String, String>> data = configMaps.data(pod.getMetadata().getNamespace(), source.getName());
    if (data.isEmpty()) {
      if (Boolean.TRUE.equals(source.getOptional())) {
        return;
      }
      throw new VolumeSetupException(volume, "configmap \"" + source.getName() + "\" not found");
    }
    int mode = Optional.ofNullable(source.getDefaultMode()).orElse(DEFAULT_FILE_MODE);
    writeKeys(volume, data.get(), source.getItems(), Boolean.TRUE.equals(source.getOptional()), mode, dir);
  }

  private static void writeKeys(String volume, Map<String, String> data, List<KeyToPath> items, boolean optional, int mode, Path dir)
      throws VolumeSetupException, IOException {
    if (items == null || items.isEmpty()) {
      for (Map.Entry<String, String> e : data.entrySet()) {
        write(volume, dir, e.getKey(), e.getValue(), mode);
      }
      return;
    }
    for (KeyToPath item : items) {
      String value = data.get(item.getKey());
      if (value == null) {
        if (optional) {
          continue;
        }
        throw new VolumeSetupException(volume, "configmap references non-existent config key: " + item.getKey());
      }
      write(volume, dir, item.getPath(), value, Optional.ofNullable(item.getMode()).orElse(mode));
    }
  }

  private void projected(Pod pod, String volume, ProjectedVolumeSource source, Path dir) throws VolumeSetupException, IOException {
    int mode = Optional.ofNullable(source.getDefaultMode()).orElse(DEFAULT_FILE_MODE);
    for (VolumeProjection p : Optional.ofNullable(source.getSources()).orElse(List.of())) {
      if (p.getServiceAccountToken() != null) {
        String account = ContainerEnvironment.serviceAccountName(pod);
        write(volume, dir, p.getServiceAccountToken().getPath(), access.tokens().token(pod.getMetadata().getNamespace(), account, place.nodeName()), mode);
        if (volume.equals(SERVICE_ACCOUNT_VOLUME)) {
          // what the admission's kube-api-access volume projects beside the token
          write(volume, dir, "ca.crt", access.caCertificate(), mode);
          write(volume, dir, "namespace", pod.getMetadata().getNamespace(), mode);
        }
      } else if (p.getConfigMap() != null) {
        ConfigMapProjection cm = p.getConfigMap();
        Optional<Map<String, String>> data = configMaps.data(pod.getMetadata().getNamespace(), cm.getName());
        if (data.isEmpty()) {
          if (Boolean.TRUE.equals(cm.getOptional())) {
            continue;
          }
          throw new VolumeSetupException(volume, "configmap \"" + cm.getName() + "\" not found");
        }
        writeKeys(volume, data.get(), cm.getItems(), Boolean.TRUE.equals(cm.getOptional()), mode, dir);
      } else if (p.getDownwardAPI() != null) {
        for (DownwardAPIVolumeFile f : Optional.ofNullable(p.getDownwardAPI().getItems()).orElse(List.of())) {
          if (f.getFieldRef() == null) {
            continue;
          }
          try {
            write(volume, dir, f.getPath(), ContainerEnvironment.field(pod, f.getFieldRef().getFieldPath(), place), Optional.ofNullable(f.getMode()).orElse(mode));
          } catch (ContainerConfigException e) {
            throw new VolumeSetupException(volume, e.getMessage());
          }
        }
      } else {
        throw new VolumeSetupException(volume, "the lab's kubelet projects serviceAccountToken, configMap and downwardAPI sources only");
      }
    }
  }

  private static void write(String volume, Path dir, String relative, String value, int mode) throws VolumeSetupException, IOException {
    Path file = inside(volume, dir, relative);
    Files.createDirectories(file.getParent());
    Files.deleteIfExists(file);
    Files.writeString(file, value, StandardCharsets.UTF_8);
    Files.setPosixFilePermissions(file, permissions(mode));
  }

  private static Path inside(String volume, Path dir, String relative) throws VolumeSetupException {
    Path file = dir.resolve(relative == null ? "" : relative).normalize();
    if (relative == null || relative.isEmpty() || relative.startsWith("/") || !file.startsWith(dir) || file.equals(dir)) {
      throw new VolumeSetupException(volume, "path '" + relative + "' must be a relative path inside the volume");
    }
    return file;
  }

  /**
   * A container's mounts of the pod's volumes, in spec order.
   *
   * @param env the container's environment, for {@code subPathExpr}
   * @throws ContainerConfigException when a mount names no volume, or its sub-path is not valid or
   *     cannot be expanded (kubelet's CreateContainerConfigError)
   */
  public List<ContainerSpec.Mount> mounts(Pod pod, Container container, Map<String, String> env, Map<String, Mounted> volumes) throws ContainerConfigException {
    List<ContainerSpec.Mount> out = new ArrayList<>();
    boolean ownServiceAccountMount = false;
    for (VolumeMount m : Optional.ofNullable(container.getVolumeMounts()).orElse(List.of())) {
      Mounted volume = volumes.get(m.getName());
      if (volume == null) {
        throw new ContainerConfigException("cannot find volume \"" + m.getName() + "\" to mount into container \"" + container.getName() + "\"");
      }
      String subPath = Optional.ofNullable(m.getSubPath()).orElse("");
      if (m.getSubPathExpr() != null && !m.getSubPathExpr().isEmpty()) {
        subPath = subPathOf(m.getSubPathExpr(), env);
      }
      Path source = volume.path();
      if (!subPath.isEmpty()) {
        source = subPathSource(m.getName(), container.getName(), volume.path(), subPath);
      }
      String target = paths.inContainer(m.getMountPath());
      ownServiceAccountMount |= m.getMountPath().equals(SERVICE_ACCOUNT_MOUNT);
      out.add(new ContainerSpec.Mount(target, source.toString(), volume.readOnly() || Boolean.TRUE.equals(m.getReadOnly())));
    }
    Mounted sa = volumes.get(SERVICE_ACCOUNT_VOLUME);
    if (sa != null && !ownServiceAccountMount && automounts(pod)) {
      out.add(new ContainerSpec.Mount(SERVICE_ACCOUNT_MOUNT, sa.path().toString(), true));
    }
    return out;
  }

  /**
   * A {@code subPathExpr} expanded from the container's environment, as kubelet expands it: every
   * variable it names must be set and non-empty.
   *
   * @throws ContainerConfigException naming the missing variables
   */
  static String subPathOf(String expression, Map<String, String> env) throws ContainerConfigException {
    java.util.TreeSet<String> missing = new java.util.TreeSet<>();
    Map<String, String> view = new java.util.AbstractMap<>() {
      @Override
      public String get(Object key) {
        String value = env.get(key);
        if (value == null || value.isEmpty()) {
          missing.add(String.valueOf(key));
          return "";
        }
        return value;
      }

      @Override
      public Set<Entry<String, String>> entrySet() {
        return env.entrySet();
      }
    };
    String expanded = EnvExpansion.expand(expression, view);
    if (!missing.isEmpty()) {
      throw new ContainerConfigException("missing value for " + String.join(", ", missing));
    }
    return expanded;
  }

  /**
   * The path a sub-path names inside a volume, created when missing as kubelet creates it: each missing
   * directory with the permission bits of the volume's root.
   *
   * @throws ContainerConfigException for an absolute sub-path, one with {@code ..}, or one that leaves
   *     the volume through a symbolic link
   */
  static Path subPathSource(String volume, String container, Path root, String subPath) throws ContainerConfigException {
    if (subPath.startsWith("/")) {
      throw new ContainerConfigException("error SubPath `" + subPath + "` must not be an absolute path");
    }
    for (String part : subPath.split("/")) {
      if (part.equals("..")) {
        throw new ContainerConfigException("unable to provision SubPath `" + subPath + "`: must not contain '..'");
      }
    }
    Path source = root.resolve(subPath).normalize();
    try {
      if (!Files.exists(source, LinkOption.NOFOLLOW_LINKS)) {
        Set<PosixFilePermission> bits = Files.getPosixFilePermissions(root);
        int special = ((Integer) Files.getAttribute(root, "unix:mode")) & 07000;
        Path at = root;
        for (Path part : root.relativize(source)) {
          at = at.resolve(part);
          if (Files.isSymbolicLink(at)) {
            throw new IOException(at + " is a symbolic link");
          }
          if (!Files.exists(at)) {
            Files.createDirectory(at);
            Files.setPosixFilePermissions(at, bits.isEmpty() ? EnumSet.noneOf(PosixFilePermission.class) : EnumSet.copyOf(bits));
            if (special != 0) {
              chmod(at, special | ((Integer) Files.getAttribute(root, "unix:mode") & 0777));
            }
          }
        }
      }
      if (!source.toRealPath().startsWith(root.toRealPath())) {
        throw new ContainerConfigException("subpath '" + subPath + "' not within volume path");
      }
    } catch (IOException e) {
      throw new ContainerConfigException("failed to create subPath directory for volumeMount \"" + volume + "\" of container \"" + container + "\"");
    }
    return source;
  }

  /** Sets a mode with setuid, setgid or sticky bits, which Java's file attributes cannot set. */
  private static void chmod(Path path, int mode) throws IOException {
    try {
      Process p = new ProcessBuilder("chmod", Integer.toOctalString(mode), path.toString()).redirectErrorStream(true).start();
      if (p.waitFor() != 0) {
        throw new IOException("chmod " + Integer.toOctalString(mode) + " " + path + " failed");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }

  private static Set<PosixFilePermission> permissions(int mode) {
    StringBuilder s = new StringBuilder();
    String letters = "rwxrwxrwx";
    for (int i = 0; i < 9; i++) {
      s.append((mode & (1 << (8 - i))) != 0 ? letters.charAt(i) : '-');
    }
    return PosixFilePermissions.fromString(s.toString());
  }
}
