# The desktop console, Persian, for procurement supervisors.
# Keys are `area-element[-variant]`; en-US/console.ftl has the same keys and variables.
# "Intent" is rendered as «درخواست»: one business outcome, such as one purchase order.

## Top bar

topbar-connection-embedded = نسخهٔ نمایشی داخلی
topbar-connection-remote = متصل به { $url }
topbar-status-live = به‌روز
topbar-status-stale = قدیمی
topbar-tenant = سازمان
topbar-provider = سرویس‌دهنده
topbar-time-range = بازهٔ زمانی
topbar-search = جست‌وجو
topbar-search-hint = شناسهٔ درخواست، کلید اقدام، رسید یا مبلغ
topbar-locale = زبان
topbar-locale-en = English
topbar-locale-fa = فارسی

## Views

view-intents = درخواست‌ها
view-dashboard = داشبورد
view-intent-title = درخواست { $intent }

## Intents table

table-column-intent = درخواست
table-column-state = وضعیت
table-column-tenant = سازمان
table-column-operation = عملیات
table-column-tier = سطح اثر
table-column-attempts = تلاش‌ها
table-column-amplification = تلاش به ازای هر درخواست
table-column-age = مدت
table-column-deadline = تا پایان مهلت
table-column-providers = سرویس‌دهنده‌ها
table-column-receipt = رسید
table-column-created = ایجاد
table-count = { $count } درخواست
table-empty = هیچ درخواستی با این فیلترها پیدا نشد.
table-receipt-none = هنوز رسیدی نیامده

## Intent states

state-new = جدید
state-prepared = آماده
state-authorized = مجوز گرفته
state-executing = در حال اجرا
state-committed = انجام شد
state-rejected = رد شد
state-cancelled = لغو شد
state-expired = مهلت گذشت
state-indeterminate = نتیجه نامعلوم
state-indeterminate-hint = معلوم نیست سامانهٔ مقصد این کار را انجام داده است یا نه. این درخواست شکست نخورده؛ تا وقتی رسید یا مدرک دیگری تکلیفش را روشن کند، در همین وضعیت می‌ماند.
state-paused = متوقف

## Consequence tiers

tier-read = خواندن
tier-compute = محاسبه
tier-proposal = پیشنهاد
tier-write = ثبت و تغییر
tier-financial = مالی

## Filters

filter-all = همه
filter-state = وضعیت
filter-tier = سطح اثر
filter-clear = پاک کردن فیلترها
filter-active = { $count } فیلتر فعال است

## Stale data

stale-banner = ارتباط قطع شده است. آنچه می‌بینید مربوط به { $seconds } ثانیه پیش است و فرمان‌ها تا برقراری دوبارهٔ ارتباط منتظر می‌مانند.
stale-retry = اتصال دوباره

## Commands

command-pause = توقف موقت
command-resume = ازسرگیری
command-reconcile = استعلام نتیجه
command-close = بستن
command-confirm = تأیید
command-cancel = انصراف
command-pause-confirm = { $count } درخواست در { $scope } موقتاً متوقف شود؟ تا ازسرگیری چیزی ارسال نمی‌شود؛ آنچه قبلاً ارسال شده برنمی‌گردد.
command-resume-confirm = { $count } درخواست در { $scope } از سر گرفته شود؟ کار از همان جایی که مانده با همان کلید اقدام ادامه پیدا می‌کند.
command-reconcile-confirm = از سامانهٔ مقصد با کلید اقدام { $key } پرسیده می‌شود که درخواست { $intent } انجام شده است یا نه. چیزی دوباره ارسال نمی‌شود.
command-close-confirm = درخواست { $intent } با نتیجهٔ «{ $disposition }» بسته شود؟ این کار برگشت ندارد و همراه با مدرک شما ثبت می‌شود.
command-close-disposition-committed = انجام شده
command-close-disposition-cancelled = انجام نشده (لغو)
command-close-evidence = مدرک
command-close-evidence-hint = آنچه نتیجه را نشان می‌دهد؛ مثلاً شمارهٔ سند در سامانهٔ ERP
command-dry-run = پیش‌نمایش: این فرمان روی { $count } درخواست اثر می‌گذارد.
command-disabled-role = نقش شما ({ $role }) اجازهٔ این کار را ندارد.
command-disabled-state = وقتی وضعیت درخواست «{ $state }» است، این کار ممکن نیست.
command-done = انجام شد.
command-refused = فرمان پذیرفته نشد: { $reason }

## Errors

error-connection = دسترسی به هماهنگ‌کننده در { $url } ممکن نیست.
error-unauthorized = وارد نشده‌اید یا توکن شما پذیرفته نشد.
error-forbidden = نقش شما اجازهٔ این کار را ندارد.
error-not-found = درخواست { $intent } پیدا نشد.
error-conflict = درخواست در این فاصله تغییر کرده است. دوباره بارگذاری کنید و از نو امتحان کنید.
error-unexpected = مشکلی پیش آمد: { $detail }

## Dates and text

date-gregorian = میلادی: { $date }
text-copy = کپی

## Intents table, filters and top bar
action-copy-id = رونوشت شناسهٔ درخواست
action-copy-key = رونوشت کلید اقدام
command-palette = فهرست فرمان‌ها
command-refresh = تازه‌سازی
command-save-view = ذخیرهٔ نمای کنونی
command-search = جست‌وجو
command-show-dashboard = نمایش داشبورد
command-show-intents = نمایش درخواست‌ها
command-switch-locale = تغییر زبان
field-action-key = کلید اقدام
field-actor = انجام‌دهنده
field-args-hash = چکیدهٔ آرگومان‌ها
field-attempts = تلاش‌ها
field-operation = عملیات
field-purpose = هدف
field-receipt = رسید
field-release = نسخه
field-tenant = سازمان
field-tool = ابزار
filter-any = همه
filter-locale = زبان
filter-min-attempts = کمینهٔ تلاش‌ها
filter-more = بیشتر
filter-no = خیر
filter-operation = عملیات
filter-paused = متوقف‌شده
filter-release = نسخه
filter-remove = حذف این پالایه
filter-search = جست‌وجو
filter-since = از
filter-tool = ابزار
filter-until = تا
filter-yes = بله
intent-attempts = تلاش‌ها
intent-close-view = بستن
intent-receipts = رسیدها
intent-transitions = تغییرهای وضعیت
range-15m = ۱۵ دقیقهٔ گذشته
range-1h = یک ساعت گذشته
range-24h = ۲۴ ساعت گذشته
range-7d = ۷ روز گذشته
range-all = همهٔ زمان‌ها
state-unknown = برای این کنسول ناشناخته
table-column-locale = زبان
table-from-cache = از حافظهٔ محلی
table-showing = نمایش
table-sorted-ascending = { $column }، به ترتیب صعودی
table-sorted-descending = { $column }، به ترتیب نزولی
topbar-status-connecting = در حال اتصال
topbar-status-offline = بدون اتصال
topbar-status-since = از
revisit-notice-title = دروازهٔ تلاش دوباره و جابه‌جایی را دوباره بررسی کنید:
revisit-notice-more = و { $count } مورد دیگر
revisit-notice-acknowledge = دیدم
revisit-notice-acknowledge-hint = این تغییرها در این میز پنهان می‌شوند و در سابقهٔ ممیزی هماهنگ‌کننده می‌مانند.
revisit-retention-shortened = { $subject }: مدت نگهداری کلید از { $old } به { $new } کوتاه شد
revisit-contract-changed = { $subject }: { $field } از { $old } به { $new } تغییر کرد
revisit-provider-first-seen = ارائه‌دهندهٔ تازه { $subject }
revisit-operation-first-seen = { $subject }: عملیات تازهٔ { $operation } (می‌سازد: { $resource })
revisit-release-first-seen = نسخهٔ تازه { $subject }
revisit-tool-first-seen = ابزار تازه { $subject } ({ $tier })
revisit-tool-new-tier = ابزار { $subject } اکنون برای { $tier } به کار می‌رود (پیش‌تر فقط { $before })
views-menu = نماهای ذخیره‌شده
views-saved-name = نما
table-attempts-of = { $used } از { $max }
unit-d = روز
unit-h = ساعت
unit-m = دقیقه
unit-s = ثانیه
unit-ms = میلی‌ثانیه

## Dashboard
dashboard-slice = تفکیک بر اساس
dashboard-slice-none = بدون تفکیک (همه با هم)
dashboard-threshold-heading = هشدار وقتی
dashboard-threshold-duplicates = اثرهای تکراری بیش از
dashboard-threshold-p99 = صدک ۹۹ تکثیر بیش از
dashboard-threshold-oldest = قدیمی‌ترین نامعلوم بیش از (دقیقه)
dashboard-threshold-goodput = افت بازده مفید از ساعت قبل (٪)
dashboard-threshold-late = نتیجه‌های دیررس (٪ تلاش‌ها)
dashboard-threshold-error-empty = عددی بنویسید؛ { $previous } همچنان برقرار است.
dashboard-threshold-error-number = این عدد نیست؛ { $previous } همچنان برقرار است.
dashboard-threshold-error-whole = عدد صحیح بنویسید؛ { $previous } همچنان برقرار است.
dashboard-threshold-error-range = باید بین { $min } و { $max } باشد؛ { $previous } همچنان برقرار است.
dashboard-threshold = آستانه
dashboard-budget = بودجه ({ $budget })
dashboard-chart-histogram = تعداد تلاش برای هر درخواست
dashboard-chart-amplification = تکثیر درخواست‌های ثبت‌شده در طول زمان (میانگین، صدک ۹۹)
dashboard-chart-indeterminate = درخواست‌های نامعلوم در طول زمان
dashboard-chart-age = سن نامعلوم‌ها (قدیمی‌ترین، صدک ۹۵، میانه)
dashboard-chart-board = قدیمی‌ترین درخواست‌های نامعلوم
dashboard-chart-attempts = تلاش‌های آغازشده
dashboard-chart-goodput = بازده مفید: درخواست‌های قطعی‌شده در هر دقیقه
dashboard-chart-goodput-attempt = بازده مفید به ازای هر تلاش
dashboard-chart-late = نتیجه‌های دیررس (سهم از تلاش‌های آغازشده)
dashboard-chart-duplicates = اثرهای تکراری
dashboard-chart-divergence = واگرایی پس از جابه‌جایی ارائه‌دهنده
dashboard-axis-intents = درخواست‌ها
dashboard-axis-attempts-per-intent = تلاش برای هر درخواست
dashboard-axis-age = سن (ساعت:دقیقه)
dashboard-axis-attempts = تلاش‌ها
dashboard-axis-per-minute = در دقیقه
dashboard-axis-ratio = سهم
dashboard-axis-effects = اثرها
dashboard-click-histogram = برای فهرست درخواست‌هایی که دست‌کم این تعداد تلاش داشته‌اند کلیک کنید
dashboard-click-created = برای فهرست درخواست‌های ثبت‌شده در این بازه کلیک کنید
dashboard-click-indeterminate = برای فهرست درخواست‌هایی که اکنون نامعلوم‌اند، از قدیمی‌ترین، کلیک کنید
dashboard-click-committed = برای فهرست درخواست‌های قطعی‌شده‌ای که در این بازه ثبت شده‌اند کلیک کنید
dashboard-series-mean = میانگین
dashboard-series-p99 = صدک ۹۹
dashboard-series-oldest = قدیمی‌ترین
dashboard-series-p95 = صدک ۹۵
dashboard-series-p50 = میانه
dashboard-series-all = همه
dashboard-tile-intents = درخواست‌ها
dashboard-tile-attempts = تلاش‌ها
dashboard-tile-amplification = تکثیر میانگین / صدک ۹۹
dashboard-tile-indeterminate = نامعلوم در این لحظه
dashboard-tile-age = سن قدیمی‌ترین / صدک ۹۵ / میانه
dashboard-tile-committed = قطعی‌شده
dashboard-tile-goodput-hour = قطعی‌شده در ساعت اخیر / ساعت قبل
dashboard-tile-duplicates = اثرهای تکراری
dashboard-tile-late = نتیجه‌های دیررس
dashboard-tile-divergence = واگرایی پس از جابه‌جایی
dashboard-board-age = مدت نامعلوم‌ماندن
dashboard-loading = در حال بارگذاری...
dashboard-empty = در این بازه داده‌ای نیست
dashboard-note-indeterminate = نمودار نامعلوم‌ها، درخواست‌هایی را می‌شمارد که در پایان هر بازه نامعلوم بوده‌اند، بر پایهٔ تغییر وضعیت‌های ثبت‌شده؛ سن‌ها هم در همان لحظه‌ها سنجیده می‌شوند.
dashboard-note-cohort = تکثیر و واگرایی دربارهٔ درخواست‌هایی است که در هر بازه ثبت شده‌اند و نتیجه‌های دیررس دربارهٔ تلاش‌هایی که در آن آغاز شده‌اند؛ تلاش‌ها، بازده مفید و اثرهای تکراری در زمان رخ‌دادن شمرده می‌شوند.
dashboard-note-provider = در تفکیک بر اساس ارائه‌دهنده، هر درخواست زیر همهٔ ارائه‌دهندگانی که تلاش‌هایش به کار برده‌اند شمرده می‌شود.
dashboard-note-time = زمان‌ها به وقت محلی این رایانه است.
dashboard-badge-p99 = صدک ۹۹ تکثیر { $value } > { $limit }
dashboard-badge-oldest = قدیمی‌ترین نامعلوم { $age } > { $limit } دقیقه
dashboard-badge-duplicates = اثرهای تکراری { $value } > { $limit }
dashboard-badge-goodput = افت بازده مفید نسبت به ساعت قبل { $value }٪ > { $limit }٪
dashboard-badge-late = نتیجه‌های دیررس { $value }٪ > { $limit }٪
dashboard-badge-hint = از یکی از آستانه‌های داشبورد گذشته است؛ برای باز کردن داشبورد کلیک کنید.
timeline-fit-activity = نمایش رویدادها
timeline-fit-span = از ایجاد تا پایان مهلت
timeline-legend = راهنمای نشانه‌ها و کلیدها

## Intent view: timeline, envelope, action-key ledger, audit trail, commands, export

intent-refresh = تازه‌سازی
intent-export = خروجی JSON...
intent-pause = توقف موقت...
intent-resume = ازسرگیری...
intent-reconcile = استعلام نتیجه...
intent-close = بستن...
intent-attempts-of = { $attempts } تلاش از { $max }
intent-signed-in = با نام { $name } ({ $role }) وارد شده‌اید.
intent-role-checking = در حال بررسی دسترسی‌های نقش شما...
intent-role-unknown = هماهنگ‌کننده نگفت نقش شما چه اجازه‌هایی دارد؛ هنگام تأیید خودش تصمیم می‌گیرد.
intent-disabled-pause-role = توقف و ازسرگیری: نقش شما ({ $role }) اجازهٔ این کار را ندارد؛ مهندسان و مدیران سامانه دارند.
intent-disabled-reconcile-role = استعلام نتیجه: نقش شما ({ $role }) اجازهٔ این کار را ندارد؛ ناظران، مهندسان و مدیران سامانه دارند.
intent-disabled-close-role = بستن: نقش شما ({ $role }) اجازهٔ این کار را ندارد؛ ناظران، مهندسان و مدیران سامانه دارند.
intent-disabled-resume-none = ازسرگیری: هیچ توقفی شامل این درخواست نیست.
intent-disabled-reconcile-state = استعلام نتیجه: فقط درخواستی که نتیجه‌اش نامعلوم است استعلام می‌شود؛ وضعیت این یکی «{ $state }» است.
intent-disabled-close-final = بستن: وضعیت درخواست «{ $state }» است و دیگر تغییر نمی‌کند.
intent-command-error = فرمان انجام نشد: { $reason }
intent-queue-full = پیشخوان مشغول است؛ دوباره امتحان کنید
intent-tab-timeline = خط زمانی
intent-tab-envelope = مشخصات
intent-tab-ledger = کلید اقدام
intent-tab-audit = سابقهٔ فرمان‌ها

timeline-title = خط زمانی
timeline-axis-direction = زمان، از چپ به راست
timeline-row-state = وضعیت
timeline-row-events = رسیدها، فرمان‌ها
timeline-row-overview = همهٔ تلاش‌ها
timeline-no-attempts = هنوز تلاشی انجام نشده است.
timeline-help = با Ctrl و چرخ ماوس یا کلیدهای + و - بزرگ‌نمایی کنید؛ با کشیدن، Shift و چرخ ماوس یا کلیدهای جهت جابه‌جا شوید؛ چرخ ماوس ردیف‌ها را می‌گرداند و Home همه را نشان می‌دهد. برای دیدن جزئیات هر تلاش روی ردیفش کلیک کنید.
timeline-select-hint = برای دیدن همهٔ جزئیات یک تلاش، روی آن در خط زمانی کلیک کنید.
timeline-click-to-select = برای دیدن همهٔ جزئیات کلیک کنید.
timeline-hedge-group = هم‌زمان با تلاش‌های دیگر گروه { $group } انجام شده است
timeline-cluster = { $count } نشانه در این نقطه؛ برای جدا دیدنشان بزرگ‌نمایی کنید.
timeline-overview-count = { $count } تلاش در جریان
timeline-overview-succeeded = موفق
timeline-overview-unknown = نتیجه نامعلوم
timeline-overview-failed = ناموفق
timeline-overview-other = در جریان یا رهاشده
timeline-line-deadline = پایان مهلت
timeline-line-reserve = زمان ذخیره برای تأیید
timeline-line-key-forget = ممکن است کلید فراموش شود
timeline-line-now = اکنون
timeline-mark-transition = تغییر وضعیت
timeline-mark-dispatch = ارسال به سامانهٔ مقصد
timeline-mark-lost = پاسخ گم شد
timeline-mark-timeout = پاسخ به‌موقع نرسید
timeline-mark-lookup = استعلام با کلید اقدام
timeline-mark-replay = تکرار پاسخ نخست
timeline-mark-mismatch = ناهمخوانی کلید (۴۲۲)
timeline-mark-receipt = رسید
timeline-mark-webhook = رسید از طریق وب‌هوک
timeline-mark-command = فرمان اپراتور
timeline-outcome-pending = در جریان
timeline-outcome-succeeded = موفق
timeline-outcome-failed = ناموفق
timeline-outcome-timed-out = پاسخ به‌موقع نرسید (نتیجه نامعلوم)
timeline-outcome-lost = پاسخ گم شد (نتیجه نامعلوم)
timeline-outcome-abandoned = رها شد

attempt-id = تلاش
attempt-kind = نوع
attempt-provider = سرویس‌دهنده
attempt-region = منطقه
attempt-model = مدل
attempt-worker = کارگزار
attempt-provider-request-id = شناسهٔ درخواست نزد سرویس‌دهنده
attempt-hedge-group = گروه تلاش‌های هم‌زمان
attempt-hedge-lost = بازنده در برابر تلاش هم‌زمان دیگر
attempt-cost = هزینهٔ گزارش‌شده
attempt-outcome = نتیجه
attempt-error-class = نوع خطا
attempt-http-status = وضعیت HTTP
attempt-retry-after = زمان پیشنهادی برای تلاش دوباره
attempt-proposal-hash = چکیدهٔ پیشنهاد
attempt-presented-key = کلید ارائه‌شده
attempt-replayed = تکرار پاسخ نخست
attempt-sent = شاید ارسال شده باشد
attempt-late = دیرهنگام
attempt-detail = توضیح
attempt-started = شروع
attempt-ended = پایان
attempt-duration = مدت
attempt-downstream-resource = منبع در سامانهٔ مقصد
attempt-key-retention = مدت نگهداری کلید هنگام ارسال

envelope-title = مشخصات درخواست
envelope-intent-id = درخواست
envelope-consequence = سطح اثر
envelope-authorization = مجوز (تأییدکننده)
envelope-downstream = سامانهٔ مقصد و عملیات
envelope-created = ایجاد
envelope-deadline = پایان مهلت
envelope-key-retention = مدت نگهداری کلید (هنگام ارسال)
envelope-key-forget = زمان احتمالی فراموشی کلید
envelope-max-attempts = تلاش‌ها / سقف
envelope-retry-owner = مسئول تلاش دوباره
envelope-receipt-id = رسید
envelope-downstream-ref = شمارهٔ سند در سامانهٔ مقصد
envelope-locale = زبان مبدأ
envelope-caller-key = کلید یکتایی درخواست‌دهنده
envelope-first-dispatch = نخستین ارسال
envelope-indeterminate-since = نامعلوم از
envelope-committed-at = زمان انجام
envelope-args = فرمان ثبت‌شده: آنچه سفارش داده شد یا شاید داده شده باشد
envelope-args-empty = بدون آرگومان
envelope-args-marks = هشدار: این متن نشانه‌های نامرئی جهت دارد که اینجا به شکل ⟦U+…⟧ نوشته شده‌اند. این نشانه‌ها می‌توانند تأمین‌کننده یا مبلغ را چیز دیگری نشان دهند؛ با مسئول عامل بررسی کنید.
envelope-args-hash-matches = این آرگومان‌ها دقیقاً همان‌هایی است که چکیده از آن‌ها گرفته شده است.
envelope-args-hash-differs = هشدار: چکیدهٔ این آرگومان‌ها با چکیدهٔ ثبت‌شده یکی نیست. پیش از بررسی داده‌های هماهنگ‌کننده بر اساس آن‌ها اقدام نکنید.
envelope-args-canonical = JSON استاندارد (متنی که چکیده از آن گرفته شده است)
envelope-args-copy = رونوشت JSON استاندارد
envelope-approved-at = زمان تأیید
envelope-approval-expires = پایان اعتبار تأیید
envelope-policy-version = نسخهٔ سیاست تأیید
envelope-no-policy = بدون سیاست
envelope-created-by = ایجادکننده
envelope-downstream-resource = منبع در سامانهٔ مقصد (هنگام ارسال)
envelope-key-retention-now = مدت نگهداری کلید در پیکربندی کنونی
retry-owner-coordinator = هماهنگ‌کننده (فقط خودش کارهای تغییردهنده را می‌فرستد و دوباره تلاش می‌کند)
retry-owner-agent = عامل (کارهایی را که گزارش می‌دهد، در سقف تلاش‌ها، خودش دوباره تلاش می‌کند)

ledger-title = دفتر کلید اقدام
ledger-no-key = این درخواست کلید اقدام ندارد، چون هرگز به سامانه‌ای که چیزی را تغییر دهد نمی‌رسد.
ledger-summary = اجرای تازه: { $fresh }. تکرار پاسخ نخست: { $replays }. ردشده به‌سبب ناهمخوانی: { $mismatches }.
ledger-ingest = کلید خود عامل برای این درخواست: درخواست‌های تکراری { $replays }، ردشده با آرگومان‌های متفاوت { $mismatches }.
ledger-forget-at = سامانهٔ مقصد ممکن است این کلید را در { $at } فراموش کند.
ledger-forget-unknown = هنوز معلوم نیست سامانهٔ مقصد کی این کلید را فراموش می‌کند، چون چیزی ارسال نشده است.
ledger-warning-passed = هشدار: ممکن است سامانهٔ مقصد این کلید را از { $at } فراموش کرده باشد. تلاش دوباره در این حالت تکراری شناخته نمی‌شود و ممکن است کار دو بار انجام شود.
ledger-warning-retry-after = هشدار: تلاش دوباره تا { $until } مجاز است، ولی سامانهٔ مقصد ممکن است کلید را در { $at } فراموش کند. تلاشی که پس از آن برسد تکراری شناخته نمی‌شود و ممکن است کار دو بار انجام شود.
ledger-no-uses = هنوز هیچ تلاشی این کلید را ارائه نکرده است.
ledger-use-fresh = اجرای تازه
ledger-use-replay = تکرار پاسخ نخست
ledger-use-mismatch = رد شد: کلید یکسان با محتوای متفاوت (۴۲۲)
ledger-use-unknown = نتیجه نامعلوم: شاید انجام شده باشد
ledger-use-in-flight = در انتظار پاسخ
ledger-use-not-applied = انجام نشد
ledger-use-lookup-found = استعلام: در سامانهٔ مقصد پیدا شد
ledger-use-lookup-not-found = استعلام: پیدا نشد یا پاسخی نیامد
ledger-after-forget = پس از زمان احتمالی فراموشی کلید
ledger-no-receipts = هنوز رسیدی نیامده است.
ledger-receipt-authoritative = معتبر
ledger-receipt-duplicate = تکراری، نادیده گرفته شد
ledger-sent-under = این کلید نخستین بار با مدت نگهداری { $retention } ارسال شد.
ledger-retention-shorter-now = هشدار: مدت نگهداری کلید در این اتصال اکنون { $live } است، کوتاه‌تر از { $sent } که کلید با آن ارسال شد. هماهنگ‌کننده کوتاه‌تر را مبنا می‌گیرد: زمان بالا با همین حساب شده و پس از آن هیچ ارسال دوباره‌ای انجام نمی‌شود.
ledger-retention-longer-now = توجه: مدت نگهداری کلید در این اتصال اکنون { $live } است، بلندتر از { $sent } که کلید با آن ارسال شد. هماهنگ‌کننده همان { $sent } هنگام ارسال را مبنا می‌گیرد.

audit-title = سابقهٔ فرمان‌ها
audit-show-dry-runs = نمایش پیش‌نمایش‌ها
audit-empty = هیچ فرمان اپراتوری روی این درخواست اجرا نشده است.
audit-who = توسط { $actor } ({ $role })
audit-why = دلیل: { $reason }
audit-no-reason = دلیلی ثبت نشده است.
audit-evidence = مدرک: شماره { $reference }؛ توضیح { $note }
audit-status-applied = اجرا شد
audit-status-refused = رد شد
audit-status-dry-run = پیش‌نمایش
audit-status-accepted = پذیرفته شد، در حال استعلام
audit-result-refused = رد شد: { $reason }
audit-result-dry-run = { $count } درخواست باز را در بر می‌گرفت.
audit-result-pause = متوقف شد؛ هنگام اجرا { $count } درخواست باز را در بر گرفت.
audit-result-resume = { $count } توقف پایان یافت.
audit-result-close = بسته شد: { $from } -> { $to }.
audit-result-reconcile-running = استعلام در جریان است.
audit-result-reconcile-others = { $count } درخواست دیگر استعلام شد؛ این یکی نه.
audit-result-reconcile-committed = در سامانهٔ مقصد با شمارهٔ { $reference } پیدا شد: انجام شده است.
audit-result-reconcile-resent = ثابت شد که انجام نشده بود: همان فرمان با همان کلید دوباره ارسال شد.
audit-result-reconcile-still = هنوز نامعلوم: { $why }
audit-result-reconcile-not-indeterminate = چیزی برای استعلام نبود: وضعیت درخواست «{ $state }» بود.
audit-result-reconcile-failed = استعلام انجام نشد؛ درخواست تغییری نکرد.

dialog-title-pause = توقف موقت
dialog-title-resume = ازسرگیری
dialog-title-reconcile = استعلام نتیجه
dialog-title-close = بستن با تعیین نتیجه
dialog-target-intent = هدف: درخواست { $intent }
dialog-target-scope = هدف: همهٔ درخواست‌های با { $scope }
dialog-target-everything = هر سازمان، سرویس‌دهنده و ابزار
dialog-scope = دامنه
dialog-scope-intent = فقط همین درخواست
dialog-scope-intent-final = کار این درخواست تمام شده است؛ چیزی برای متوقف کردن نمانده.
dialog-scope-tenant = همهٔ درخواست‌های سازمان { $tenant }
dialog-scope-provider = همهٔ درخواست‌هایی که از سرویس‌دهندهٔ { $provider } استفاده می‌کنند
dialog-scope-tool = همهٔ درخواست‌هایی که از ابزار { $tool } استفاده می‌کنند
dialog-scope-limited = توکن شما به { $tenants } محدود است؛ دامنه از آن بیرون نمی‌رود.
dialog-dry-run-asking = در حال پرسیدن از هماهنگ‌کننده که این فرمان شامل کدام درخواست‌ها می‌شود...
dialog-dry-run-result =
    { $count ->
        [0] اکنون هیچ درخواست بازی را در بر نمی‌گیرد.
       *[other] اکنون { $count } درخواست باز را در بر می‌گیرد:
    }
dialog-dry-run-more = ... و { $count } درخواست دیگر.
dialog-dry-run-failed = پیش‌نمایش انجام نشد: { $reason }
dialog-dry-run-future = درخواست‌هایی که بعداً در این دامنه قرار بگیرند هم تا ازسرگیری نگه داشته می‌شوند.
dialog-will = چه اتفاقی می‌افتد
dialog-will-not = چه اتفاقی نمی‌افتد
dialog-pause-will = تا کسی دوباره آن‌ها را از سر نگیرد، برای درخواست‌های این دامنه هیچ تلاش تازه یا تلاش خودکار دوباره‌ای شروع نمی‌شود.
dialog-pause-will-not = کاری که در جریان است لغو نمی‌شود و ممکن است تمام شود. استعلام‌های فقط‌خواندنی ادامه پیدا می‌کنند. هیچ چیزی برگردانده نمی‌شود.
dialog-resume-will = توقف پایان می‌یابد: تلاش‌هایی که نگه داشته شده بودند می‌توانند با همان کلیدهای اقدام دوباره شروع شوند.
dialog-resume-will-not = هیچ چیزی دو بار ارسال نمی‌شود و تصمیم‌هایی که در زمان توقف گرفته شده برنمی‌گردند.
dialog-reconcile-will = هماهنگ‌کننده، فقط برای خواندن، از سامانهٔ مقصد می‌پرسد که آیا سندی با کلید اقدام { $key } وجود دارد. اگر پیدا شود، درخواست با همان سند به‌عنوان رسید «انجام شد» می‌شود. اگر سامانهٔ مقصد ثابت کند چنین سندی نیست و هنوز کلید را به یاد دارد، همان فرمان با همان کلید دوباره ارسال می‌شود که نمی‌تواند سند دومی بسازد.
dialog-reconcile-will-not = کلید تازه‌ای ساخته نمی‌شود و هیچ چیز کورکورانه دوباره ارسال نمی‌شود. اگر پاسخ چیزی را ثابت نکند، نتیجهٔ درخواست نامعلوم می‌ماند.
dialog-close-committed-will = درخواست با رسید { $reference } «انجام شد» ثبت می‌شود. تلاش دوباره متوقف می‌شود. این کار برگشت ندارد.
dialog-close-cancelled-will = درخواست بر پایهٔ مدرک شما مبنی بر اینکه در سامانهٔ مقصد هیچ چیزی انجام نشده، «لغو شد» ثبت می‌شود. تلاش دوباره متوقف می‌شود. این کار برگشت ندارد.
dialog-close-will-not = چیزی به سامانهٔ مقصد فرستاده نمی‌شود: هیچ سندی در آنجا ساخته، تغییر داده یا برگردانده نمی‌شود.
dialog-disposition = نتیجه
dialog-disposition-committed = انجام شد: کار در سامانهٔ مقصد ثبت شده است
dialog-disposition-cancelled = لغو شد: هیچ چیزی ثبت نشده است
dialog-reference = رسید یا شمارهٔ سند در سامانهٔ مقصد
dialog-reference-optional = رسید یا شمارهٔ سند در سامانهٔ مقصد (اختیاری)
dialog-reference-hint = مثلاً شمارهٔ سفارش خرید در ERP
dialog-note = مدرکی که نشان می‌دهد چیزی ثبت نشده
dialog-note-optional = مدرک (اختیاری)
dialog-note-hint = چه چیزی و کجا بررسی شد
dialog-reason = دلیل
dialog-reason-optional = دلیل (اختیاری)
dialog-reason-hint = دلیل، برای سابقهٔ فرمان‌ها
dialog-needs-reason = نوشتن دلیل لازم است.
dialog-needs-reference = برای بستن با نتیجهٔ «انجام شد» شمارهٔ رسید یا سند لازم است.
dialog-needs-evidence = برای بستن با نتیجهٔ «لغو شد» مدرکی لازم است که نشان دهد چیزی ثبت نشده.
dialog-needs-dry-run = صبر کنید تا پیش‌نمایش نشان دهد این فرمان شامل چه چیزی می‌شود.
dialog-committed-not-now = «انجام شد» فقط وقتی ممکن است که درخواست در حال اجرا یا با نتیجهٔ نامعلوم باشد.
dialog-confirm-pause = تأیید توقف
dialog-confirm-resume = تأیید ازسرگیری
dialog-confirm-reconcile = استعلام
dialog-confirm-close = تأیید بستن
dialog-cancel = انصراف
dialog-sending = فرمان { $id } در حال ارسال است. اگر پاسخ گم شود، با همان شناسه دوباره فرستاده می‌شود، پس فقط یک بار اجرا می‌شود.
dialog-refused = هماهنگ‌کننده آن را نپذیرفت: { $reason }
dialog-failed = تأیید نشد: { $reason }. ممکن است رسیده باشد یا نرسیده باشد. ارسال دوباره بی‌خطر است: همان شناسهٔ فرمان را دارد و حداکثر یک بار اجرا می‌شود.
dialog-send-again = ارسال دوباره
dialog-resume-which = کدام توقف پایان یابد
dialog-error-forbidden = نقش شما اجازهٔ این کار را ندارد ({ $detail })

export-title-intent = خروجی درخواست به‌صورت JSON
export-title-table = خروجی جدول به‌صورت CSV
export-what-intent = مشخصات، همهٔ تلاش‌ها، رسیدها، تغییرهای وضعیت، سابقهٔ فرمان‌ها، توقف‌ها و دفتر کلید اقدام.
export-what-table = { $count } درخواست، همان‌طور که اکنون در جدول دیده می‌شوند.
export-path = پرونده
export-save = ذخیره
export-close = بستن
export-writing = در حال نوشتن...
export-done = در { $path } ذخیره شد
export-failed = ذخیره نشد: { $reason }
export-no-intent = هیچ درخواستی باز نیست.
command-export-intent = خروجی JSON از درخواست باز
command-export-table = خروجی CSV از جدول
dialog-needs-scope = انتخاب کنید توقف شامل چه چیزی باشد.
dialog-target-unchosen = هدف: هنوز انتخاب نشده
