/**
 * Local-file-inclusion vocabulary as facts: the files and directories a file-read attack aims at,
 * and the file types a program loads as code, which name a module rather than a secret.
 *
 * Sources: {@link SENSITIVE_FILES} are the targets of the public traversal word lists (dotdotpwn
 * and PayloadsAllTheThings' `File Inclusion/Intruders` lists: Unix accounts and service
 * configuration, `/proc`, Windows' `win.ini`, `boot.ini`, `system32\drivers\etc\hosts`,
 * `system32\config\SAM`, `repair\sam`, IIS and XAMPP configuration and logs, `web.config`), and
 * from the OWASP Core Rule Set's `rules/lfi-os-files.data` (rule 930120, Apache-2.0) the
 * histories and credential stores of a home directory, `tomcat-users.xml`, `anaconda-ks.cfg`
 * and `/sys`.
 * {@link CODE_LIBRARY} follows the image formats' own file types: Microsoft's PE format
 * (executables, DLLs, drivers `.sys`, `.ocx`, `.drv`, `.cpl`, `.efi`, resource DLLs `.mui`,
 * Python's `.pyd`) with its program databases (`.pdb`), ELF shared objects (`lib<name>.so.<N>`,
 * as ld.so names them) and kernel modules (`.ko`), and Mach-O dynamic libraries (`.dylib`).
 */

/**
 * Files and directories an application never has a reason to serve, as fragments of one
 * lower-case regular expression over a path whose separators are folded to `/`.
 */
export const SENSITIVE_FILES: readonly string[] = [
  "etc/(?:passwd|shadow|master\\.passwd|group|gshadow|hosts|issue|motd|hostname|fstab|crontab|" +
  "sudoers|profile|bashrc|resolv\\.conf|mtab|inittab|inetd\\.conf|network|security/|" +
  "ssh/|mysql/|apache2?/|httpd/|nginx/|php\\d?(?:\\.\\d)?/|redhat-release|debian_version|" +
  "lsb-release|os-release|proftpd|vsftpd|aliases|exports|syslog|sysconfig|shells|" +
  "ld\\.so|x11/|init\\.d|rc\\.d|cron|apt/|knockd|ftpusers|samba/|my\\.cnf|pam\\.d)",
  "proc/(?:self|\\d+|version|cpuinfo|meminfo|mounts|net/|sched_debug|interrupts|" +
  "partitions|stat|modules|loadavg|filesystems|devices|ioports|swaps|kcore|cmdline)",
  "(?:^|/)(?:boot|win|system)\\.ini",
  "windows/(?:system32|system\\.ini|win\\.ini|repair|panther|debug|php\\.ini|" +
  "system\\.ini|temp/|iis\\d|inf/|microsoft\\.net)",
  "winnt/(?:system32|repair|win\\.ini|php\\.ini)",
  "system32/(?:drivers|config|inetsrv|cmd\\.exe|logfiles)",
  "(?:^|/)\\.(?:htaccess|htpasswd|bashrc|passwd|netrc|" +
  "forward|cshrc|tcshrc|rhosts|shosts|bash_logout|bash_profile|viminfo|pgpass|gitconfig|" +
  "profile|ssh/|aws/|git/(?:config|head|index|logs)|svn/|npmrc|docker/|kube/|" +
  // shells' and REPLs' histories, and the stores of credentials (CRS lfi-os-files.data)
  "[a-z0-9]+_history|lesshst|credentials|git-credentials|google_authenticator|msmtprc|" +
  "s3cfg|boto|xauthority|my\\.cnf|pypirc|gnupg/|azure/|password-store)",
  "(?:^|/)web-inf/",
  "(?:^|/)meta-inf/",
  "id_(?:rsa|dsa|ecdsa|ed25519)(?:\\.pub)?(?:$|[^a-z])",
  "var/(?:log|lib|mail|spool|run|adm|www|cache|db)/",
  "usr/local/(?:apache|etc|lib/php|zend|psa|cpanel|www)",
  "(?:^|/)(?:private/etc|opt/lampp|xampp|apache\\d?/(?:conf|logs)|inetpub/)",
  "(?:^|/)wp-config\\.php",
  // Tomcat's accounts, the installer's kickstart file with the root password, the kernel's
  // views of the hardware (CRS lfi-os-files.data)
  "tomcat-users\\.xml",
  "(?:^|/)anaconda-ks\\.cfg",
  "(?:^|/)sys/(?:kernel|devices|firmware|hypervisor|block)/",
  "(?:^|/)master\\.passwd",
  "(?:^|/)dev/(?:tcp|udp|null|random|urandom|stdin|fd/|zero)",
  "(?:^|/)(?:ntuser\\.dat|ntuser\\.ini|pagefile\\.sys|hiberfil\\.sys|unattend\\.xml|sysprep\\.inf)(?:$|[^a-z])",
  "(?:^|/)(?:global\\.asa|web\\.config|php\\.ini|httpd\\.conf|my\\.cnf|my\\.ini|sam$|autoexec\\.bat|" +
  "config\\.sys|access_log|error_log|access\\.log|error\\.log)",
];

/**
 * The file name of an image a program loads as code, or of its debug symbols, lower-case:
 * `vcruntime140.dll`, `app.exe`, `app.pdb`, `nvlddmkm.sys`, `libc.so.6`, `libdyld.dylib`.
 */
export const CODE_LIBRARY = /\.(?:exe|dll|sys|drv|ocx|cpl|efi|mui|pyd|pdb|so(?:\.\d+)*|ko|dylib)$/;

/**
 * Directories that hold configuration, logs and the kernel's views of a process, and never a
 * loaded library: a "module" there (`/etc/pureftpd.pdb`, a PureDB file) is a file to read.
 */
export const NO_CODE_ROOT =
  /^[\s"']*(?:[a-z]:)?\/(?:etc|proc|dev|sys|boot|private\/etc|usr\/local\/etc|var\/log|var\/mail)\//;
