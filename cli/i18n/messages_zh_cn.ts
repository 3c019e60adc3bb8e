/** Simplified Chinese command-line messages: the same ids and placeholders as `messages_en.ts`. */
import type { MessageId } from "./messages_en.ts";

export const ZH_CN: Readonly<Record<MessageId, string>> = {
  "cli.tagline": "自托管的 Web 应用防火墙",
  "cli.usage_line": "用法：waf <命令> [选项]",
  "cli.commands": "命令：",
  "cli.help_summary": "显示某个命令的帮助",
  "cli.global_help": `全局选项（可放在命令词之前或之后）：
  --config PATH        配置文件（默认：<data-dir>/waf.yaml，即 ./data/waf.yaml）
  --data-dir DIR       数据目录（默认：./data，或配置文件中的 data_dir）
  --log-format FORMAT  text（默认）或 json
  -h, --help           显示帮助
  -V, --version        显示版本
环境变量：WAF_LANG=en|zh-CN 为单次运行选择语言（参见 “waf lang”）`,
  "cli.unpacked_at":
    "此自包含构建在首次运行时已解压到 {dir}（解压到 $XDG_CACHE_HOME/waf/<content>/，\n默认为 ~/.cache/waf/<content>/；主目录不可写时为 <data-dir>/.runtime/<content>/）",
  "cli.option_needs_value": "选项 {option} 需要一个值",
  "cli.bad_log_format": "选项 --log-format 只接受 “text” 或 “json”，实际为 “{value}”",
  "cli.see_help": "运行 “waf --help” 查看用法。",
  "cli.see_list": "运行 “waf --help” 查看命令列表。",
  "cli.unknown_command": "未知命令：“{command}”",
  "cli.unknown_command_near": "未知命令：“{command}”；您是否要输入 “{suggestion}”？",
  "cli.group_commands": "“waf {group}” 后面需要以下命令之一：",
  "cli.group_hint": "运行 “waf help {group} <命令>” 查看其中某个命令的用法。",
  "cli.unknown_option": "未知选项：“{option}”",
  "cli.missing_command": "缺少命令",
  "flags.unknown_option": "未知选项 “{option}”",
  "flags.missing_value": "选项 “{option}” 需要一个值",
  "flags.no_value": "选项 “{option}” 不接受值",
  "flags.unexpected_argument": "多余的参数：“{argument}”",
  "flags.missing_argument": "缺少参数",
  "flags.required": "必须提供选项 {option}",
  "flags.exclusive": "{options} 必须且只能指定一个",
  "flags.bad_duration": "选项 {option} 需要时长，例如 “5s” 或 “500ms”，实际为 “{value}”",
  "cli.see_command_help": "运行 “waf help {command}” 查看用法。",
  "config.invalid": "配置文件 “{path}” 无效：",
  "config.not_found": "找不到配置文件：“{path}”",
  "config.valid": "配置文件 “{path}” 有效",
  "serve.production_unavailable":
    "ErrProductionStorageUnavailable：storage.profile 为 “production”，但它所需的依赖缺失或无法连接；拒绝启动（未打开任何监听，未写入任何文件）：",
  "serve.deployment_keys": "部署密钥文件 “{file}” 无法使用：{reason}",
  "serve.deployment_keys_missing":
    "文件不存在，但数据库已属于一个部署，新生成的密钥无法打开其中已加密的内容：请从其他控制器或备份复制该部署的密钥文件（权限 0600）",
  "serve.deployment_keys_mismatch":
    "其中的密钥不属于该数据库所属的部署：请从其他控制器或备份复制正确的部署密钥文件",
  "serve.deployment_keys_damaged":
    "它不是部署密钥文件，或其中的密钥已损坏：请从其他控制器或备份恢复",
  "serve.deployment_keys_unreadable": "无法读取：请让运行 waf 的用户可读（权限 0600，属于该用户）",
  "serve.deployment_keys_unwritable": "无法创建：请创建其所在目录，或让运行 waf 的用户可在该处写入",
  "serve.listener_failed": "无法在 {address} 上打开 {listener} 监听：{reason}",
  "serve.listen_in_use": "已有其他进程在此监听（请在 waf.yaml 中更换地址或端口，或停止该进程）",
  "serve.listen_permission": "权限不足（1024 以下的端口需要特权：请选择 1024 及以上的端口）",
  "serve.listen_unavailable": "本机没有这个地址（请检查 waf.yaml 中的主机部分）",
  "serve.listen_other": "操作系统拒绝了该请求",
  "serve.not_started": "waf 未启动，也未向数据目录 “{dir}” 写入任何内容",
  "serve.start_undone": "waf 未启动；本次启动写入数据目录 “{dir}” 的内容已被删除",
  "store.schema_too_new":
    "数据库架构版本 {found} 高于此程序支持的版本（{known}）：请升级 waf，或恢复升级前的备份",
  "lang.current": "语言：{lang}（{source}）",
  "lang.source_env": "来自 WAF_LANG",
  "lang.source_file": "保存在 “{path}”",
  "lang.source_default": "默认",
  "lang.supported": "支持的语言：{list}",
  "lang.ignored_env": "WAF_LANG=“{value}” 不是受支持的语言，已忽略",
  "lang.ignored_file": "“{path}” 中的语言 “{value}” 不受支持，已忽略",
  "lang.unknown": "不支持的语言 “{value}”：可选 {list}",
  "lang.set_done": "语言已设置为 {lang}（保存在 “{path}”）",
  "lang.env_overrides": "注意：已设置 WAF_LANG，带该变量运行的命令将使用 {lang}",
  "store.missing": "“{path}” 处没有存储：请检查 --data-dir 或 data_dir",
  "store.open_failed": "无法打开存储 “{path}”：{error}",
  "store.backup_exists": "拒绝覆盖 “{path}”：请使用新的文件名",
  "store.backup_no_folder":
    "文件夹 “{folder}” 不存在：请先创建（mkdir -p “{folder}”）或选择其他 --out",
  "store.backup_not_a_folder": "“{folder}” 不是文件夹：请为 “{path}” 选择其他 --out",
  "store.backup_corrupt": "备份副本未通过完整性检查，已删除：",
  "store.backup_failed": "备份失败：{error}",
  "store.backup_done": "备份已写入 “{path}”（{bytes} 字节，架构版本 {version}）；副本完整性检查：",
  "store.check_failed": "存储未通过完整性检查：",
  "store.check_done": "“{path}” 的完整性检查（架构版本 {version}）：",
  "store.backup_production":
    "storage.profile 为 production：存储是 PostgreSQL 数据库 {where}，本命令未写入任何内容。请用 pg_dump 备份（密码通过 PGPASSWORD 或 ~/.pgpass 提供）：",
  "store.backup_production_keys":
    "请将 storage.production.secrets_file 与数据库分开备份：没有它，部署加密的任何内容都无法打开。",
  "store.check_production": "PostgreSQL 存储 {where} 的检查（架构版本 {version}）；各表行数：",
  "store.migrate_bad_schema": "架构名 “{schema}” 必须是小写 SQL 名称",
  "store.migrate_not_empty":
    "拒绝迁移：目标 {where} 不为空（表 {table} 中有数据）。请使用空数据库或其他 --schema",
  "store.migrate_source_version":
    "存储的架构版本为 {found}，本程序复制版本 {known}：请先运行一次本版本的 waf serve（它会迁移存储），停止后再次迁移",
  "store.migrate_failed": "迁移失败，目标保持为空：{error}",
  "store.migrate_done": "已复制到 {where} 并校验（每表的行数和校验和）：",
  "store.migrate_config": "迁移前请停止 waf serve（之后的写入不会被复制）。然后修改配置：",
  "store.migrate_next":
    "访问日志留在本数据目录的 waf.db 中；新记录写入 access_log.db。然后启动 waf serve。",
  "store.migrate_keys_hint":
    "首次启动前，请用 “{dir}/totp.key”（加密密钥）和 “{dir}/auth.key”（签名密钥）创建 storage.production.secrets_file，或对空目标使用 --secrets-file PATH 重新运行：新的密钥文件无法打开本机加密的机密。",
  "store.migrate_keys_exists":
    "拒绝覆盖密钥文件 “{path}”：请选择其他 --secrets-file 或不使用该选项",
  "store.migrate_keys_missing":
    "复制已提交，但 “{dir}/totp.key” 或 “{dir}/auth.key” 不存在，未写入密钥文件：请恢复它们，并在首次启动前写好 storage.production.secrets_file",
  "store.migrate_keys_failed": "复制已提交，但无法写入密钥文件 “{path}”：{error}",
  "store.migrate_keys_written": "部署密钥文件已写入 “{path}”（权限 0600）：每个控制器使用同一文件",
  "logs.bad_name": "归档名 “{name}” 必须是以 “.zip” 结尾的普通文件名（字母、数字、“.”、“_”、“-”）",
  "logs.store_skipped": "无法打开存储，已略过其导出：{error}",
  "logs.exists": "拒绝覆盖 “{path}”：请换一个 --name",
  "logs.done": "支持归档已写入 “{path}”（{bytes} 字节）：",
  "logs.failed": "打包支持归档失败：{error}",
  "crp.verifying": "正在校验 “{path}”",
  "crp.failed": "失败",
  "crp.step.file": "软件包是普通文件，共 {bytes} 字节（上限 {max}）",
  "crp.step.entries":
    "共 {count} 个归档条目，均为普通文件或目录，路径均为安全的相对路径（上限 {max}）",
  "crp.step.signature": "manifest.sig 是对 manifest.json 的有效 Ed25519 签名（密钥 {key}）",
  "crp.step.manifest": "manifest.json 格式正确：{name} {version}，{files} 个文件",
  "crp.step.files":
    "每个文件都已列出且 SHA-256 和大小一致，没有缺失或未列出的文件（{files} 个文件，{bytes} 字节）",
  "crp.verified": "软件包 {name} {version} 校验通过（sha256 {sha256}）",
  "crp.staged": "已暂存 {name} {version}（sha256 {sha256}）于 “{path}”",
  "crp.not_connected": "暂存的软件包不会用于插件执行、服务启动、集群分发或下载",
  "crp.stage_failed": "暂存失败；之前暂存的软件包保持不变：{error}",
  "crp.unavailable":
    "{command} 不可用：它需要受保护的控制面和 sidecar 适配器，而此运行时没有。未做任何更改",
  "crp.fail.not_found": "软件包文件不存在",
  "crp.fail.not_regular": "软件包不是普通文件（拒绝链接、目录和设备文件）",
  "crp.fail.too_large": "软件包有 {bytes} 字节，超过上限 {max}",
  "crp.fail.malformed": "软件包不是有效的 ustar 归档：{detail}",
  "crp.fail.too_many_files": "软件包的条目超过 {max} 个",
  "crp.fail.entry_type": "条目 “{path}” 是{type}；只允许普通文件和目录",
  "crp.fail.unsafe_path": "路径 “{path}” 不安全：{problem}",
  "crp.fail.duplicate": "路径 “{path}” 出现了两次",
  "crp.fail.manifest_missing": "缺少 manifest.json",
  "crp.fail.manifest_too_large": "manifest.json 超过 {max} 字节",
  "crp.fail.signature_missing": "缺少 manifest.sig",
  "crp.fail.signature_malformed": "manifest.sig 不是 base64 编码的 Ed25519 签名（64 字节）",
  "crp.fail.no_keys": "未配置公钥：请把签名者的公钥加入配置中的 crp.public_keys",
  "crp.fail.bad_key": "crp.public_keys 的第 {index} 项不是 Ed25519 公钥",
  "crp.fail.signature_invalid": "签名无法用已配置的 {keys} 个公钥中的任何一个验证",
  "crp.fail.manifest_invalid": "manifest.json 无效：{detail}",
  "crp.fail.reserved_listed": "清单列出了保留文件 “{path}”",
  "crp.fail.unlisted": "文件 “{path}” 未在清单中列出",
  "crp.fail.missing": "清单列出的文件 “{path}” 不存在",
  "crp.fail.size_mismatch": "文件 “{path}” 有 {actual} 字节，但清单记录为 {expected}",
  "crp.fail.hash_mismatch": "“{path}” 的 SHA-256 与清单不一致",
  "crp.path.absolute": "它是绝对路径",
  "crp.path.dot_dot": "它包含 “..”",
  "crp.path.backslash": "它包含反斜杠",
  "crp.path.empty": "它含有空的或 “.” 路径段",
  "crp.path.characters": "只允许 ASCII 字母、数字、“.”、“_” 和 “-”，且路径段不能以 “.” 或 “-” 开头",
  "crp.path.long": "它超过 255 个字符",
  "crp.type.hardlink": "硬链接",
  "crp.type.symlink": "符号链接",
  "crp.type.char-device": "字符设备",
  "crp.type.block-device": "块设备",
  "crp.type.fifo": "FIFO 管道",
  "crp.type.extension": "扩展头（pax 或 GNU），不受支持",
  "probe.header": "正在探测 {url}（每步超时 {timeout} 毫秒）",
  "probe.ok": "成功",
  "probe.skipped": "跳过",
  "probe.failed": "失败",
  "probe.not_run": "未执行（前一步失败）",
  "probe.skip_ip": "主机是 IP 地址",
  "probe.skip_plain": "明文 http",
  "probe.tls_detail": "{protocol}，ALPN {alpn}，主体 {subject}，签发者 {issuer}，到期 {expires}",
  "probe.http_detail": "{status}，响应头 {bytes} 字节，首字节时间 {ttfb}",
  "probe.bad_url": "选项 --url 需要 http:// 或 https:// 地址，实际为 “{url}”",
  "probe.ca_unreadable": "无法读取 CA 文件 “{path}”：{error}",
  "user.password_on_command_line":
    "警告：通过 --password 传入的密码可能出现在进程列表和 shell 历史中；建议使用 --password-stdin",
  "user.empty_stdin": "标准输入中没有密码",
  "user.no_name": "没有名为 “{name}” 的账户（名称按字节精确匹配）",
  "user.no_id": "没有 id 为 “{id}” 的账户（id 精确匹配）",
  "user.username_invalid": "用户名 “{name}” 不符合用户名规则：{reason}",
  "user.username_taken": "用户名 “{name}” 属于另一个账户；账户永远不会被合并",
  "user.username_canonical": "用户名 “{name}” 已符合规则：请改用 “waf user rename”",
  "user.same_username": "新用户名与旧用户名相同：无需更改",
  "user.password_policy": "密码不符合密码策略：",
  "user.no_admin_role": "apisec.permissions 中没有配置 “admin” 角色",
  "user.password_set": "已更改 “{name}” 的密码；其现有会话将在下一次请求时失效",
  "user.totp_disabled": "该账户的双因素认证（TOTP）已关闭",
  "user.totp_was_off": "双因素认证（TOTP）原本就是关闭的",
  "user.generated": "生成的密码（只显示这一次）：",
  "user.admin_created": "已创建管理员账户 “{name}”（id {id}）",
  "user.setup_url_removed": "首次安装设置已完成；已删除安装链接文件",
  "setup.no_store": "“{path}” 处没有存储：请先用此数据目录运行一次 “waf serve”",
  "setup.already_complete": "设置已完成：请在控制台的 /login 页面登录",
  "setup.link_written": "安装链接已写入 {path}（{minutes} 分钟内有效）",
  "setup.receipt": "回执：{receipt}",
  "user.admin_updated":
    "账户 “{name}” 现在是已启用的管理员（原角色 “{role}”），并已设置新密码；其现有会话将在下一次请求时失效",
  "user.renamed": "已将 “{old}” 重命名为 “{name}”；撤销了 {sessions} 个会话",
  "user.repaired":
    "已修复 {id} 的用户名：“{old}” 现为 “{name}”；撤销了 {sessions} 个会话；已记入用户名修复日志",
  "username.whitespace": "包含空白字符 {char}",
  "username.control": "包含控制或格式字符 {char}",
  "username.non_ascii": "包含非 ASCII 字符 {char}",
  "username.character": "包含 {char}；只允许 ASCII 字母、数字、“.”、“_” 和 “-”",
  "username.length": "长度必须为 3 到 32 个字符，而不是 {length}",
  "username.first": "必须以 ASCII 字母开头",
  "username.last": "必须以 ASCII 字母或数字结尾",
  "password.min_length": "至少 10 个字符",
  "password.max_length": "最多 256 个字符",
  "password.character_classes":
    "至少包含以下 4 类中的 3 类：大写字母、小写字母、数字（不能全是同一个数字）、特殊字符",
  "password.common_password": "不能是常见密码",
  "password.sequence": "不能包含 4 个或以上连续的字母或数字，例如 “abcd” 或 “1234”",
  "password.keyboard_walk": "不能包含 4 个或以上相邻的键盘按键，例如 “qwer” 或 “asdf”",
  "password.repeated_run": "同一字符不能连续重复 4 次或以上，也不能重复短模式",
  "password.contains_username": "不能等于或包含用户名（不区分大小写）",
};

/** Chinese help for each command, keyed by its words (`"store backup"`). */
export const HELP_ZH_CN: Readonly<Record<string, { summary: string; usage: string }>> = {
  "serve": {
    summary: "运行数据面和管理面",
    usage: `waf serve [--config PATH] [--data-dir DIR] [--log-format text|json] [--join-token TOKEN]

在同一个内置存储上启动数据面反向代理（server.data.listen，默认 0.0.0.0:8080）和管理面
（server.management.listen，默认 127.0.0.1:9443）。配置文件不存在时按文档中的默认值创建。
日志同时写入标准错误和 <data-dir>/logs/waf.log（按大小轮转：10 MiB × 5）。
收到 SIGINT 或 SIGTERM 时平稳停止。cluster.role 为 node 时，--join-token（或环境变量
WAF_CLUSTER_JOIN_TOKEN，或 cluster.join_token）用于一次性加入控制器；令牌从不写入日志。`,
  },
  "config check": {
    summary: "校验配置文件",
    usage: `waf config check [--config PATH]

校验配置文件，并逐条打印问题及其键路径。
有效时退出码为 0，无效或缺失时为 2。`,
  },
  "setup url": {
    summary: "轮换首次安装的安装令牌并写出新的安装链接",
    usage: `waf setup url [--config PATH] [--data-dir DIR]

首次安装尚未完成时，替换安装令牌（运行中的服务立即接受新令牌并拒绝旧令牌），把完整的安装链接
写入 <data-dir>/runtime/setup.url（权限 0600，10 分钟内有效），只打印该文件的路径和令牌回执。
安装已完成时退出码为 1。`,
  },
  "user password": {
    summary: "设置账户密码（恢复访问）",
    usage: `waf user password USERNAME (--password-stdin | --password PASSWORD | --generate)
                  [--reset-2fa]

设置名称与 USERNAME 完全相同的账户的密码。密码输入方式必须且只能选一种：--password-stdin
（推荐：从标准输入读取一行）、--password PASSWORD（会出现在进程列表中）或 --generate
（生成符合策略的强密码，只打印一次）。适用密码策略。--reset-2fa 同时关闭双因素认证（TOTP）。
凭据纪元递增，因此该账户的现有会话会在下一次请求时失效（“waf serve” 运行时同样如此）。
以本地 CLI 身份记入审计。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "user ensure-admin": {
    summary: "创建管理员账户，或把现有账户设为管理员",
    usage: `waf user ensure-admin USERNAME --password-stdin

确保存在名为 USERNAME 的已启用管理员账户：不存在时创建（第一个账户同时完成首次安装设置），
存在时把它设为已启用的管理员并设置密码（其会话在下一次请求时失效）。USERNAME 必须符合用户名规则。
也可用 --password PASSWORD 或 --generate 代替 --password-stdin。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "user rename": {
    summary: "重命名账户（新旧名称都须符合规则）",
    usage: `waf user rename OLD NEW

把账户 OLD 重命名为 NEW。两个名称都必须符合用户名规则，因此这里不能选中不合规的历史用户名
（请用 “waf user repair-username”）。撤销该账户所有未撤销的会话。写入普通审计记录，
不写用户名修复记录。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "user repair-username": {
    summary: "修复不符合规则的历史用户名",
    usage: `waf user repair-username USER_ID NEW_USERNAME --reason TEXT

仅适用于当前用户名不符合现行用户名规则的账户（规则收紧之前可能存在这样的账户）。USER_ID
必须与账户不可变的 id 完全一致；NEW_USERNAME 必须符合规则且不属于其他账户（账户永远不会被合并）。
在一个事务中更新用户名、撤销该账户所有未撤销的会话，并追加到用户名修复日志（你的操作系统用户
和 uid、原因、旧名和新名、撤销的会话数、时间）。id、密码、角色和双因素状态保持不变。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "store migrate": {
    summary: "把本机存储复制到空的 PostgreSQL 数据库",
    usage: `waf store migrate --to-dsn DSN [--schema NAME] [--secrets-file PATH]

把 “temporary” 部署迁移到生产配置。请先停止 “waf serve”。在一个事务中把 <data-dir>/waf.db 的
所有管理表（用户、会话、站点、策略、审计、设置等；不含访问日志，它留在本地）复制到 PostgreSQL
数据库 DSN 的架构 NAME（默认 public），保留 id 并重置自增序列。目标中任何表有数据时拒绝，并指出
该表。提交前校验两侧每张表的行数和校验和（失败时目标保持为空），打印结果和需要修改的配置行。
--secrets-file 用 totp.key 和 auth.key 写出部署密钥文件（权限 0600，不覆盖已有文件）。
DSN 中的密码从不打印。在 production 配置下，“waf user ...” 命令作用于该数据库。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "store backup": {
    summary: "在线写出存储的一致性备份",
    usage: `waf store backup --out FILE

在 “waf serve” 继续运行的同时，把管理存储（<data-dir>/waf.db）的一致性快照写入 FILE
（SQLite VACUUM INTO：仍在预写日志中的提交也会包含在内；绝不是简单的文件复制），
然后对副本执行 PRAGMA integrity_check 并打印 “ok”。FILE 已存在时拒绝覆盖。
存储按原样打开、不做迁移，因此升级前做的备份保留旧的架构版本。每次升级或修复前请先备份。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "store check": {
    summary: "对在用存储执行完整性检查",
    usage: `waf store check

对在用存储执行 PRAGMA integrity_check（只读，“waf serve” 运行时也安全），
通过时打印 “ok”，否则打印问题并以 1 退出。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "logs pack": {
    summary: "把日志和脱敏后的配置打包成支持用 ZIP",
    usage: `waf logs pack --dir DIR [--name FILE.zip]

在 DIR 中写出支持归档 ZIP：运行日志（<data-dir>/logs/waf.log 及其轮转文件）、
从存储导出的审计日志和最近的访问日志、脱敏后的生效配置，以及 manifest.json
（时间、版本、主机信息）。默认文件名为 waf-support-<UTC 时间>.zip。
绝不包含安装令牌、TOTP 密钥、会话密钥、密码或令牌哈希、私钥。拒绝覆盖已有文件。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "lang show": {
    summary: "显示命令行语言",
    usage: `waf lang show

显示命令消息的语言、其来源（WAF_LANG、<data-dir>/cli.json 或默认的英语）以及支持的语言。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "lang set": {
    summary: "设置命令行语言（en 或 zh-CN）",
    usage: `waf lang set <en|zh-CN>

把命令消息的语言保存到 <data-dir>/cli.json。环境变量 WAF_LANG 可在单次运行中覆盖它。
不支持的语言会被拒绝，并列出支持的语言。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "crp verify": {
    summary: "离线校验已签名的内容包",
    usage: `waf crp verify PACKAGE.tar

按以下顺序离线检查本地软件包，遇到第一个失败即停止：文件是普通文件且不超过大小上限；
每个 tar 条目都是普通文件或目录（不允许链接、设备或 FIFO），路径是安全的相对路径
（不允许绝对路径、“..” 或重复），条目数不超过上限；manifest.sig 是 crp.public_keys 中
某个公钥对 manifest.json 的有效 Ed25519 签名；每个文件都在清单中列出且 SHA-256 和大小一致，
清单列出的文件都存在。逐项打印检查结果。
仅做校验：暂存的软件包不会用于插件执行、服务启动、集群分发或下载。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "crp stage": {
    summary: "校验软件包并放入暂存槽",
    usage: `waf crp stage PACKAGE.tar

与 “waf crp verify” 完全相同地校验 PACKAGE，然后保存为 <data-dir>/crp/staged.tar
（先写临时文件、同步到磁盘、再重命名：崩溃后要么是旧的暂存包，要么是新的）。
暂存的软件包不会用于插件执行、服务启动、集群分发或下载。
退出码：0 成功，1 失败，2 用法错误。`,
  },
  "crp activate": {
    summary: "不可用：安全失败，不做任何更改",
    usage: `waf crp activate

激活暂存的软件包需要受保护的控制面和 sidecar 适配器，而此运行时没有。
该命令安全失败：打印原因，不做任何更改，并以 1 退出。`,
  },
  "crp rollback": {
    summary: "不可用：安全失败，不做任何更改",
    usage: `waf crp rollback

回滚需要受保护的控制面和 sidecar 适配器，而此运行时没有。
该命令安全失败：打印原因，不做任何更改，并以 1 退出。`,
  },
  "temporary-online probe": {
    summary: "一次性出站探测：DNS、TCP、TLS、HTTP 及耗时",
    usage: `waf temporary-online probe --url URL [--timeout 5s] [--ca-file PEM] [--json]

独立的一次性运维工具：向 URL（http 或 https）发出一次出站请求，并报告每一步及其耗时：
DNS（系统解析器；IP 地址时为 “跳过”）、TCP 连接、TLS（协议、ALPN、证书主体、签发者和
到期时间；--ca-file 在系统根证书之外额外信任本地 CA）以及 HTTP（状态、响应头字节数、
首字节时间）。然后退出。--timeout 限制每一步的时长（默认 5s）。waf 的其他部分不会调用它；
它不是插件出站 API。收到 HTTP 响应时退出码为 0，某一步失败时为 1。
退出码：0 成功，1 失败，2 用法错误。`,
  },
};
